package serve

import "net/http"

// Client identity (the key of the per-client cap, the breaker and their shared state
// in Redis). The rule, in upstream's order where that order is safe:
//
//  1. the x-laya-client header, but only from a caller the server trusts to name
//     a tenant: an authenticated caller when LAYA_API_KEY is set, or a trusted proxy
//     (LAYA_PROXY_HEADERS with the peer in LAYA_FORWARDED_ALLOW_IPS) otherwise;
//  2. the client IP: the peer, or behind trusted proxies the X-Forwarded-For hop
//     they vouch for.
//
// Upstream also trusts the header from anyone and keys a caller by its bearer
// credential: the first lets a caller escape its cap (a new name per request) or get
// a victim 429'd (the victim's name), the second puts every holder of the one
// LAYA_API_KEY into one bucket. Both are left out: an untrusted header is ignored,
// and the bearer credential is never a key (nor, so, written to Redis).
func (s *Server) clientKey(r *http.Request) string {
	if c := r.Header.Get("X-Laya-Client"); c != "" && s.trustsClientHeader(r) {
		return "client:" + truncateRunes(c, 200)
	}
	return "ip:" + peerIP(r, s.proxies)
}

// trustsClientHeader reports whether r's x-laya-client may name its tenant.
func (s *Server) trustsClientHeader(r *http.Request) bool {
	if s.cfg.APIKey != "" {
		return s.authorized(r)
	}
	return s.proxies.trusts(remoteHost(r))
}

// truncateRunes keeps the first n characters of s, as Python's s[:n] does (upstream
// keys are header[:200], and the Redis keys of Go and Python replicas must agree).
func truncateRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := 0
	for k := range s {
		if i == n {
			return s[:k]
		}
		i++
	}
	return s
}
