module github.com/laya-metal/laya

go 1.26.0

require (
	github.com/ebitengine/purego v0.11.3
	golang.org/x/sys v0.50.0
	golang.org/x/text v0.44.0
)
