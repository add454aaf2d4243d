package webhooks

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"unsafe"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/caddyserver/caddy/v2/modules/logging"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Caddy's access log records the request as it arrived, headers and URI
// included, before any handler runs: a secret some providers send in a
// header (GitLab's X-Gitlab-Token) or in the query (Meta's
// hub.verify_token) lands in it, and no handler can change that copy. Only
// the log's own filter can keep it out (the README's log configuration);
// at start, the app warns for each server that logs access for a source
// whose provider sends such a secret, unless every log receiving that
// server's access entries deletes it.

// WebhookSourcer is implemented by the HTTP handlers that receive a
// webhook source (webhook_ingress): how the app finds which server serves
// which source.
type WebhookSourcer interface {
	WebhookSource() string
}

// secretField is one place of a request where a secret travels, as
// Caddy's log filter names it.
type secretField struct {
	// field is the filter's field path: request>headers>X-Gitlab-Token,
	// or request>uri for a query parameter
	field string
	// param is the query parameter, for request>uri
	param string
}

func (f secretField) String() string {
	if f.param != "" {
		return f.field + " query " + f.param
	}
	return f.field
}

// secretFields are where src's provider sends a secret in a request.
func secretFields(src *Source) []secretField {
	var out []secretField
	for _, h := range src.SecretHeaders {
		// the header as Caddy's access log writes it: Go's canonical form
		out = append(out, secretField{field: "request>headers>" + http.CanonicalHeaderKey(h)})
	}
	for _, p := range src.SecretQueryParams {
		out = append(out, secretField{field: "request>uri", param: p})
	}
	return out
}

// warnAccessLogSecrets logs a warning for each source whose provider's
// secret the access log of a server serving it would record.
func (a *App) warnAccessLogSecrets() {
	v, err := a.ctx.AppIfConfigured("http")
	if err != nil || v == nil {
		return
	}
	httpApp, ok := v.(*caddyhttp.App)
	if !ok {
		return
	}
	logging := configuredLogging(a.ctx)
	a.sourceMu.RLock()
	defer a.sourceMu.RUnlock()
	for name, srv := range httpApp.Servers {
		if srv.Logs == nil {
			continue
		}
		for _, source := range servedSources(srv.Routes) {
			src, ok := a.sources[source]
			if !ok {
				continue
			}
			var unfiltered []string
			for _, f := range secretFields(src) {
				if !accessLogFilters(logging, srv.Logs, f) {
					unfiltered = append(unfiltered, f.String())
				}
			}
			if len(unfiltered) > 0 {
				a.log.Warn("Caddy's access log records a webhook secret of this source: add the README's log filter (Logs) to the site's log",
					zap.String("server", name), zap.String("source", source), zap.Strings("fields", unfiltered))
			}
		}
	}
}

// servedSources are the webhook sources of routes, subroutes included.
func servedSources(routes caddyhttp.RouteList) []string {
	var out []string
	for _, r := range routes {
		for _, h := range r.Handlers {
			switch h := h.(type) {
			case WebhookSourcer:
				out = append(out, h.WebhookSource())
			case *caddyhttp.Subroute:
				out = append(out, servedSources(h.Routes)...)
			}
		}
	}
	return out
}

// accessLogFilters reports whether every log that receives the access
// entries of a server with logs cfg deletes (or replaces, or hashes) f.
// logging nil (not readable) means the configured logs are not known:
// then nothing is known to filter.
func accessLogFilters(logging *caddy.Logging, cfg *caddyhttp.ServerLogConfig, f secretField) bool {
	if logging == nil {
		return false
	}
	names := accessLoggerNames(cfg)
	_, hasDefault := logging.Logs[caddy.DefaultLoggerName]
	if !hasDefault {
		// Caddy's default log, not configured: it takes every logger's
		// entries, unfiltered
		return false
	}
	for _, cl := range logging.Logs {
		if !slices.ContainsFunc(names, func(n string) bool { return loggerAllowed(cl, n) }) {
			continue
		}
		if !filtersCover(logFilters(cl), f) {
			return false
		}
	}
	return true // every log taking the entries filters f, or none takes them
}

// accessLoggerNames are the names a server's access entries for its sites
// are written under, as Caddy picks them (ServerLogConfig.getLoggerHosts):
// http.log.access.<name> for each site host's logger names and the
// default logger name; http.log.access itself when there are none (a JSON
// config's bare "logs": {}). Requests for hosts no site maps (a scan of
// the IP) go to http.log.access too, but never reach a webhook route.
func accessLoggerNames(cfg *caddyhttp.ServerLogConfig) []string {
	var names []string
	if cfg.DefaultLoggerName != "" {
		names = append(names, "http.log.access."+cfg.DefaultLoggerName)
	}
	for _, nn := range cfg.LoggerNames {
		for _, n := range nn {
			names = append(names, "http.log.access."+n)
		}
	}
	if len(names) == 0 {
		names = append(names, "http.log.access")
	}
	return names
}

// loggerAllowed is whether a custom log takes the entries of the logger
// name, by Caddy's rule (CustomLog.loggerAllowed, for a logger name): the
// longest include against the longest exclude, names matched on dots.
func loggerAllowed(cl *caddy.CustomLog, name string) bool {
	if len(cl.Include) == 0 && len(cl.Exclude) == 0 {
		return true
	}
	name += "."
	longestAccept, longestReject := 0, 0
	for _, ns := range cl.Include {
		if strings.HasPrefix(name, ns+".") && len(ns) > longestAccept {
			longestAccept = len(ns)
		}
	}
	if len(cl.Include) > 0 && longestAccept == 0 {
		return false
	}
	for _, ns := range cl.Exclude {
		if ns == "*" {
			return false
		}
		if strings.HasPrefix(name, ns+".") && len(ns) > longestReject {
			longestReject = len(ns)
		}
	}
	if longestReject > longestAccept {
		return false
	}
	return longestAccept > longestReject || (len(cl.Include) == 0 && longestReject == 0)
}

// fieldFilter is what a log's filter encoder does to one field: its
// filter (delete, replace, hash, query, ...) and, for query, the
// parameters it deletes, replaces or hashes.
type fieldFilter struct {
	filter string
	params []string
}

// logFilters are the field filters of a custom log's encoder: read from
// the provisioned encoder (Caddy keeps it in BaseLog's unexported encoder,
// and drops EncoderRaw once loaded), else from EncoderRaw (a log not
// provisioned). nil when its encoder is not the filter encoder.
func logFilters(cl *caddy.CustomLog) map[string]fieldFilter {
	if enc := provisionedEncoder(cl); enc != nil {
		fe, ok := enc.(*logging.FilterEncoder)
		if !ok {
			return nil
		}
		out := make(map[string]fieldFilter, len(fe.Fields))
		for field, flt := range fe.Fields {
			switch flt := flt.(type) {
			case *logging.DeleteFilter:
				out[field] = fieldFilter{filter: "delete"}
			case *logging.ReplaceFilter:
				out[field] = fieldFilter{filter: "replace"}
			case *logging.HashFilter:
				out[field] = fieldFilter{filter: "hash"}
			case *logging.QueryFilter:
				ff := fieldFilter{filter: "query"}
				for i := range flt.Actions {
					a := reflect.ValueOf(&flt.Actions[i]).Elem()
					if typ := a.FieldByName("Type").String(); typ == "delete" || typ == "replace" || typ == "hash" {
						ff.params = append(ff.params, a.FieldByName("Parameter").String())
					}
				}
				out[field] = ff
			default:
				out[field] = fieldFilter{filter: "other"}
			}
		}
		return out
	}
	var enc struct {
		Format string                     `json:"format"`
		Fields map[string]json.RawMessage `json:"fields"`
	}
	if json.Unmarshal(cl.EncoderRaw, &enc) != nil || enc.Format != "filter" {
		return nil
	}
	out := make(map[string]fieldFilter, len(enc.Fields))
	for field, raw := range enc.Fields {
		var flt struct {
			Filter  string `json:"filter"`
			Actions []struct {
				Type      string `json:"type"`
				Parameter string `json:"parameter"`
			} `json:"actions"`
		}
		if json.Unmarshal(raw, &flt) != nil {
			continue
		}
		ff := fieldFilter{filter: flt.Filter}
		for _, a := range flt.Actions {
			if a.Type == "delete" || a.Type == "replace" || a.Type == "hash" {
				ff.params = append(ff.params, a.Parameter)
			}
		}
		out[field] = ff
	}
	return out
}

// filtersCover reports whether field filters remove f: a delete, replace
// or hash filter on f's field or one of its parents, or, for a query
// parameter, a query filter on its field deleting, replacing or hashing it.
func filtersCover(filters map[string]fieldFilter, f secretField) bool {
	for field, ff := range filters {
		if field != f.field && !strings.HasPrefix(f.field, field+">") {
			continue
		}
		switch ff.filter {
		case "delete", "replace", "hash":
			return true
		case "query":
			if field == f.field && f.param != "" && slices.Contains(ff.params, f.param) {
				return true
			}
		}
	}
	return false
}

// provisionedEncoder is a provisioned custom log's encoder (BaseLog's
// unexported encoder, read by reflection; nil before provisioning).
func provisionedEncoder(cl *caddy.CustomLog) zapcore.Encoder {
	f := reflect.ValueOf(&cl.BaseLog).Elem().FieldByName("encoder")
	if !f.IsValid() || f.Type() != reflect.TypeFor[zapcore.Encoder]() || f.IsNil() {
		return nil
	}
	return *(*zapcore.Encoder)(unsafe.Pointer(f.UnsafeAddr()))
}

// configuredLogging is the logging configuration of ctx's config: Caddy
// keeps it in the Context's unexported cfg and gives modules no accessor,
// so it is read by reflection (as is each log's provisioned encoder). nil
// when it cannot be (a Caddy whose Context changed shape;
// TestConfiguredLoggingReadable fails then, and the warning falls back to
// "not known to filter").
func configuredLogging(ctx caddy.Context) *caddy.Logging {
	f := reflect.ValueOf(&ctx).Elem().FieldByName("cfg")
	if !f.IsValid() || f.Kind() != reflect.Pointer || f.Type().Elem() != reflect.TypeFor[caddy.Config]() || f.IsNil() {
		return nil
	}
	cfg := (*caddy.Config)(unsafe.Pointer(f.Pointer()))
	return cfg.Logging
}
