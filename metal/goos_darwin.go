//go:build darwin

package metal

const isDarwin = true
