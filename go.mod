module github.com/laya-metal/laya

go 1.26.0

require (
	github.com/ebitengine/purego v0.11.3
	github.com/gdamore/tcell/v2 v2.13.10
	golang.org/x/sys v0.50.0
	golang.org/x/term v0.37.0
	golang.org/x/text v0.44.0
)

require (
	github.com/gdamore/encoding v1.0.1 // indirect
	github.com/lucasb-eyer/go-colorful v1.3.0 // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
)
