package serve

import (
	"errors"
	"net/http"
	"testing"
)

func TestPeerIP(t *testing.T) {
	trusted, err := parseTrusted("127.0.0.1, 10.0.0.0/8, ::1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		remote string
		xff    []string
		t      *trustedProxies
		want   string
	}{
		{"203.0.113.9:5000", []string{"1.2.3.4"}, trusted, "203.0.113.9"},              // untrusted peer: header ignored
		{"127.0.0.1:5000", []string{"1.2.3.4"}, trusted, "1.2.3.4"},                    // one trusted proxy
		{"127.0.0.1:5000", []string{"6.6.6.6, 1.2.3.4, 10.1.2.3"}, trusted, "1.2.3.4"}, // spoofed left entry ignored
		{"127.0.0.1:5000", []string{"6.6.6.6", "1.2.3.4"}, trusted, "1.2.3.4"},         // several headers
		{"127.0.0.1:5000", nil, trusted, "127.0.0.1"},
		{"127.0.0.1:5000", []string{"10.0.0.2"}, trusted, "10.0.0.2"}, // all trusted: the leftmost
		{"[::1]:5000", []string{"2001:db8::1"}, trusted, "2001:db8::1"},
		{"127.0.0.1:5000", []string{"1.2.3.4"}, nil, "127.0.0.1"}, // proxy headers off
	} {
		r := &http.Request{RemoteAddr: tc.remote, Header: http.Header{}}
		for _, v := range tc.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		if got := peerIP(r, tc.t); got != tc.want {
			t.Errorf("%s %v: %s, want %s", tc.remote, tc.xff, got, tc.want)
		}
	}
	if all, _ := parseTrusted("*"); !all.trusts("8.8.8.8") {
		t.Error("* must trust every peer")
	}
	if _, err := parseTrusted("10.0.0.0/33"); !errors.Is(err, ErrConfig) {
		t.Errorf("bad network: %v", err)
	}
	if _, err := parseTrusted("proxy.local"); !errors.Is(err, ErrConfig) {
		t.Errorf("host name: %v", err)
	}
}
