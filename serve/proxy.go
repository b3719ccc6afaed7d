package serve

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// trustedProxies are the peers whose X-Forwarded-For is believed (upstream
// LAYA_PROXY_HEADERS with LAYA_FORWARDED_ALLOW_IPS, as uvicorn applies them).
type trustedProxies struct {
	all      bool
	prefixes []netip.Prefix
}

// parseTrusted reads a comma-separated list of IPs, CIDR networks or "*".
func parseTrusted(list string) (*trustedProxies, error) {
	t := &trustedProxies{}
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		switch {
		case item == "":
		case item == "*":
			t.all = true
		case strings.Contains(item, "/"):
			p, err := netip.ParsePrefix(item)
			if err != nil {
				return nil, fmt.Errorf("%w: LAYA_FORWARDED_ALLOW_IPS entry %q: %v", ErrConfig, item, err)
			}
			t.prefixes = append(t.prefixes, unmapPrefix(p).Masked())
		default:
			a, err := netip.ParseAddr(item)
			if err != nil {
				return nil, fmt.Errorf("%w: LAYA_FORWARDED_ALLOW_IPS entry %q is not an IP, a network or *", ErrConfig, item)
			}
			t.prefixes = append(t.prefixes, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
		}
	}
	return t, nil
}

// unmapPrefix turns an IPv4-mapped IPv6 network (::ffff:10.0.0.0/104) into
// the IPv4 network it covers (10.0.0.0/8): trusts unmaps every address it
// checks, so a mapped network would otherwise match nothing. One shorter
// than /96 also covers addresses outside ::ffff:0:0/96 and stays as it is.
func unmapPrefix(p netip.Prefix) netip.Prefix {
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p
}

func (t *trustedProxies) trusts(host string) bool {
	if t == nil {
		return false
	}
	if t.all {
		return true
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, p := range t.prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// remoteHost is the peer's address without its port.
func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// peerIP is the client's address: the peer, or behind trusted proxies the nearest
// X-Forwarded-For entry that is not itself a trusted proxy (read right to left, so
// that a client cannot choose it by prepending entries).
func peerIP(r *http.Request, t *trustedProxies) string {
	host := remoteHost(r)
	if !t.trusts(host) {
		return host
	}
	var hops []string
	for _, h := range r.Header.Values("X-Forwarded-For") {
		for _, hop := range strings.Split(h, ",") {
			if hop = strings.TrimSpace(hop); hop != "" {
				hops = append(hops, hop)
			}
		}
	}
	for i := len(hops) - 1; i >= 0; i-- {
		if !t.trusts(hops[i]) || i == 0 {
			return hops[i]
		}
	}
	return host
}
