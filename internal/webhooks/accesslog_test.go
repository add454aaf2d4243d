package webhooks

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// readmeFilter is the README's log filter (Logs), as the Caddyfile
// adapter writes it.
const readmeFilter = `{"format":"filter","wrap":{"format":"json"},"fields":{
	"request>headers>X-Gitlab-Token":{"filter":"delete"},
	"request>uri":{"filter":"query","actions":[{"type":"delete","parameter":"hub.verify_token"}]}}}`

// TestAccessLogFilters: whether every log receiving a server's access
// entries keeps a secret out, for the shapes configs take.
func TestAccessLogFilters(t *testing.T) {
	gitlab := secretField{field: "request>headers>X-Gitlab-Token"}
	meta := secretField{field: "request>uri", param: "hub.verify_token"}
	site := &caddyhttp.ServerLogConfig{DefaultLoggerName: "log0"}
	caddyfileLogs := func(encoder string) *caddy.Logging {
		return &caddy.Logging{Logs: map[string]*caddy.CustomLog{
			"default": {BaseLog: caddy.BaseLog{}, Exclude: []string{"http.log.access.log0"}},
			"log0":    {BaseLog: caddy.BaseLog{EncoderRaw: json.RawMessage(encoder)}, Include: []string{"http.log.access.log0"}},
		}}
	}
	for _, tc := range []struct {
		name    string
		logging *caddy.Logging
		server  *caddyhttp.ServerLogConfig
		field   secretField
		want    bool
	}{
		{"the README's filter: X-Gitlab-Token", caddyfileLogs(readmeFilter), site, gitlab, true},
		{"the README's filter: hub.verify_token", caddyfileLogs(readmeFilter), site, meta, true},
		{"a plain json log", caddyfileLogs(`{"format":"json"}`), site, gitlab, false},
		{"no encoder", caddyfileLogs(``), site, meta, false},
		{"all headers deleted", caddyfileLogs(`{"format":"filter","fields":{"request>headers":{"filter":"delete"}}}`), site, gitlab, true},
		{"the header replaced", caddyfileLogs(`{"format":"filter","fields":{"request>headers>X-Gitlab-Token":{"filter":"replace","value":"x"}}}`), site, gitlab, true},
		{"another header deleted", caddyfileLogs(`{"format":"filter","fields":{"request>headers>X-Signature":{"filter":"delete"}}}`), site, gitlab, false},
		{"the uri deleted", caddyfileLogs(`{"format":"filter","fields":{"request>uri":{"filter":"delete"}}}`), site, meta, true},
		{"another query parameter", caddyfileLogs(`{"format":"filter","fields":{"request>uri":{"filter":"query","actions":[{"type":"delete","parameter":"hub.challenge"}]}}}`), site, meta, false},
		{"no logging config: the default log takes all", nil, site, gitlab, false},
		{"the default log not configured", &caddy.Logging{Logs: map[string]*caddy.CustomLog{
			"log0": {BaseLog: caddy.BaseLog{EncoderRaw: json.RawMessage(readmeFilter)}, Include: []string{"http.log.access.log0"}}}}, site, gitlab, false},
		{"the default log takes the access entries too", &caddy.Logging{Logs: map[string]*caddy.CustomLog{
			"default": {},
			"log0":    {BaseLog: caddy.BaseLog{EncoderRaw: json.RawMessage(readmeFilter)}, Include: []string{"http.log.access.log0"}}}}, site, gitlab, false},
		{"a JSON config: server logs with no name, default log filtered", &caddy.Logging{Logs: map[string]*caddy.CustomLog{
			"default": {BaseLog: caddy.BaseLog{EncoderRaw: json.RawMessage(readmeFilter)}}}}, &caddyhttp.ServerLogConfig{}, gitlab, true},
		{"a host's own logger unfiltered", caddyfileLogs(readmeFilter), &caddyhttp.ServerLogConfig{DefaultLoggerName: "log0",
			LoggerNames: map[string]caddyhttp.StringArray{"hooks.example.com": {"log1"}}}, gitlab, false},
		{"a site host's logger (a Caddyfile site with a host)", caddyfileLogs(readmeFilter), &caddyhttp.ServerLogConfig{
			LoggerNames: map[string]caddyhttp.StringArray{"localhost": {"log0"}}}, gitlab, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := accessLogFilters(tc.logging, tc.server, tc.field); got != tc.want {
				t.Errorf("accessLogFilters = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestLoggerAllowed: Caddy's rule for which custom log takes a logger's
// entries (CustomLog.loggerAllowed), on the access loggers' names.
func TestLoggerAllowed(t *testing.T) {
	for _, tc := range []struct {
		include, exclude []string
		name             string
		want             bool
	}{
		{nil, nil, "http.log.access.log0", true},
		{[]string{"http.log.access.log0"}, nil, "http.log.access.log0", true},
		{[]string{"http.log.access.log0"}, nil, "http.log.access.log01", false},
		{[]string{"http.log.access"}, nil, "http.log.access.log0", true},
		{nil, []string{"http.log.access.log0"}, "http.log.access.log0", false},
		{nil, []string{"http.log.access.log0"}, "http.log.access", true},
		{[]string{"http"}, []string{"http.log.access"}, "http.log.access.log0", false},
		{[]string{"http.log.access"}, []string{"http"}, "http.log.access.log0", true},
		{nil, []string{"*"}, "http.log.access", false},
	} {
		cl := &caddy.CustomLog{Include: tc.include, Exclude: tc.exclude}
		if got := loggerAllowed(cl, tc.name); got != tc.want {
			t.Errorf("include %v exclude %v, %s: %v, want %v", tc.include, tc.exclude, tc.name, got, tc.want)
		}
	}
}

// TestAccessLoggerNames: the logger names Caddy writes a server's access
// entries under.
func TestAccessLoggerNames(t *testing.T) {
	for _, tc := range []struct {
		cfg  caddyhttp.ServerLogConfig
		want []string
	}{
		{caddyhttp.ServerLogConfig{}, []string{"http.log.access"}},
		{caddyhttp.ServerLogConfig{DefaultLoggerName: "log0"}, []string{"http.log.access.log0"}},
		{caddyhttp.ServerLogConfig{LoggerNames: map[string]caddyhttp.StringArray{"a.example": {"log1", "log2"}}},
			[]string{"http.log.access.log1", "http.log.access.log2"}},
		{caddyhttp.ServerLogConfig{DefaultLoggerName: "log0", LoggerNames: map[string]caddyhttp.StringArray{"a.example": {"log1"}}},
			[]string{"http.log.access.log0", "http.log.access.log1"}},
	} {
		got := accessLoggerNames(&tc.cfg)
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.cfg, got, tc.want)
		}
	}
}

// TestConfiguredLoggingReadable: the logging configuration and each log's
// provisioned encoder are read from a real provisioned context of this
// Caddy version (it keeps both unexported, and drops a loaded log's
// EncoderRaw): a Caddy upgrade that changes that fails here, not silently.
func TestConfiguredLoggingReadable(t *testing.T) {
	want := &caddy.Logging{Logs: map[string]*caddy.CustomLog{
		"default": {BaseLog: caddy.BaseLog{WriterRaw: json.RawMessage(`{"output":"stderr"}`)}, Exclude: []string{"http.log.access.probe"}},
		"probe": {BaseLog: caddy.BaseLog{WriterRaw: json.RawMessage(`{"output":"file","filename":` + strconv.Quote(filepath.Join(t.TempDir(), "access.log")) + `}`),
			EncoderRaw: json.RawMessage(readmeFilter)},
			Include: []string{"http.log.access.probe"}},
	}}
	ctx, err := caddy.ProvisionContext(&caddy.Config{Admin: &caddy.AdminConfig{Disabled: true}, Logging: want})
	if err != nil {
		t.Fatal(err)
	}
	if got := configuredLogging(ctx); got != want {
		t.Fatalf("configuredLogging = %p, want the config's %p", got, want)
	}
	if got := configuredLogging(caddy.Context{}); got != nil {
		t.Fatalf("a context without a config: %v", got)
	}
	probe := want.Logs["probe"]
	if provisionedEncoder(probe) == nil {
		t.Fatal("the provisioned log's encoder is not readable")
	}
	filters := logFilters(probe)
	for _, f := range []secretField{{field: "request>headers>X-Gitlab-Token"}, {field: "request>uri", param: "hub.verify_token"}} {
		if !filtersCover(filters, f) {
			t.Errorf("the provisioned README filter does not cover %s: %+v", f, filters)
		}
	}
	if !accessLogFilters(want, &caddyhttp.ServerLogConfig{DefaultLoggerName: "probe"}, secretField{field: "request>headers>X-Gitlab-Token"}) {
		t.Error("a provisioned config with the README filter is reported unfiltered")
	}
}
