package ingress

import (
	"reflect"
	"testing"
)

// TestUpstreamTLSOver: a destination's TLS fields replace the source's one
// by one; the ones it leaves out are the source's; a client certificate
// and its key go together.
func TestUpstreamTLSOver(t *testing.T) {
	source := &UpstreamTLS{RootCAPEMFiles: []string{"/src-ca.pem"}, ClientCertificateFile: "/src.pem", ClientCertificateKeyFile: "/src.key", ServerName: "src.internal"}
	for _, tc := range []struct {
		name       string
		dest, base *UpstreamTLS
		want       *UpstreamTLS
	}{
		{"neither", nil, nil, nil},
		{"source only", nil, source, source},
		{"destination only", &UpstreamTLS{ServerName: "d"}, nil, &UpstreamTLS{ServerName: "d"}},
		{"server name replaced", &UpstreamTLS{ServerName: "d"}, source,
			&UpstreamTLS{RootCAPEMFiles: []string{"/src-ca.pem"}, ClientCertificateFile: "/src.pem", ClientCertificateKeyFile: "/src.key", ServerName: "d"}},
		{"CAs replaced, not added", &UpstreamTLS{RootCAPEMFiles: []string{"/d-ca.pem"}}, source,
			&UpstreamTLS{RootCAPEMFiles: []string{"/d-ca.pem"}, ClientCertificateFile: "/src.pem", ClientCertificateKeyFile: "/src.key", ServerName: "src.internal"}},
		{"client pair replaced whole", &UpstreamTLS{ClientCertificateFile: "/d.pem", ClientCertificateKeyFile: "/d.key"}, source,
			&UpstreamTLS{RootCAPEMFiles: []string{"/src-ca.pem"}, ClientCertificateFile: "/d.pem", ClientCertificateKeyFile: "/d.key", ServerName: "src.internal"}},
		{"insecure from either", &UpstreamTLS{}, &UpstreamTLS{InsecureSkipVerify: true}, &UpstreamTLS{InsecureSkipVerify: true}},
	} {
		got := tc.dest.over(tc.base)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if source.ServerName != "src.internal" {
		t.Errorf("over changed the source's options: %+v", source)
	}
}
