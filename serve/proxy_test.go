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
	// Networks and addresses written IPv4-mapped are the IPv4 ones, whichever
	// way the peer's address comes.
	mapped, err := parseTrusted("::ffff:10.0.0.0/104, ::ffff:192.0.2.7")
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{"10.1.2.3": true, "::ffff:10.1.2.3": true, "11.0.0.1": false,
		"192.0.2.7": true, "::ffff:192.0.2.7": true, "192.0.2.8": false} {
		if got := mapped.trusts(host); got != want {
			t.Errorf("::ffff:10.0.0.0/104, ::ffff:192.0.2.7 trusts %s: %v, want %v", host, got, want)
		}
	}
	if wide, _ := parseTrusted("::/64"); !wide.trusts("::1") {
		t.Error("::/64 must trust ::1")
	}
	if _, err := parseTrusted("10.0.0.0/33"); !errors.Is(err, ErrConfig) {
		t.Errorf("bad network: %v", err)
	}
	if _, err := parseTrusted("proxy.local"); !errors.Is(err, ErrConfig) {
		t.Errorf("host name: %v", err)
	}
}
