package serve

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// manifests reads every document of deploy/kubernetes/*.yaml, by kind and name.
func manifests(t *testing.T) map[string]map[string]any {
	t.Helper()
	files, _ := filepath.Glob("../deploy/kubernetes/*.yaml")
	if len(files) == 0 {
		t.Fatal("no manifests under deploy/kubernetes")
	}
	out := map[string]map[string]any{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var doc map[string]any
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if doc == nil {
				continue
			}
			kind, _ := doc["kind"].(string)
			name, _ := at(doc, "metadata", "name").(string)
			out[kind+"/"+name] = doc
		}
	}
	return out
}

// at walks a decoded document by map keys and list indexes.
func at(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// TestKubernetesManifests checks deploy/kubernetes against the server itself: the
// probes and the preStop hook name routes it serves with the methods it accepts, on
// the port it listens on; every LAYA_* setting is one it reads and accepts; the
// grace period covers LAYA_SHUTDOWN_GRACE_S and the preStop wait; the Service, the
// HPA and LAYA_STATE_URL point at what the manifests define.
func TestKubernetesManifests(t *testing.T) {
	docs := manifests(t)
	dep := docs["Deployment/laya"]
	if dep == nil {
		t.Fatalf("no Deployment laya among %v", slices.Sorted(func(yield func(string) bool) {
			for k := range docs {
				if !yield(k) {
					return
				}
			}
		}))
	}
	pod := at(dep, "spec", "template", "spec")
	c := at(pod, "containers", 0)
	env := map[string]string{}
	for _, e := range at(c, "env").([]any) {
		name, _ := at(e, "name").(string)
		if v, ok := at(e, "value").(string); ok {
			env[name] = v
		} else if at(e, "valueFrom") == nil {
			t.Errorf("env %s: neither value (a string) nor valueFrom", name)
		}
	}
	// Every LAYA_* is one the server or laya serve reads, and its value is accepted.
	known := map[string]bool{"LAYA_HOST": true, "LAYA_PORT": true, "LAYA_LOG_FORMAT": true, "LAYA_LOG_LEVEL": true,
		"LAYA_AUTO_TASK": true, "LAYA_DEFAULT_MODEL": true}
	for _, v := range EnvVars {
		known[v[0]] = true
	}
	for name := range env {
		if !known[name] {
			t.Errorf("env %s is no setting of laya serve", name)
		}
	}
	cfg := DefaultConfig()
	if err := cfg.FromEnv(func(k string) string { return env[k] }); err != nil {
		t.Errorf("the manifest's settings: %v", err)
	}
	port, _ := strconv.Atoi(env["LAYA_PORT"])
	var portName string
	for _, p := range at(c, "ports").([]any) {
		if at(p, "containerPort") == port {
			portName, _ = at(p, "name").(string)
		}
	}
	if port == 0 || portName == "" {
		t.Fatalf("no container port named for LAYA_PORT=%q", env["LAYA_PORT"])
	}
	if env["LAYA_HOST"] != "0.0.0.0" {
		t.Errorf("LAYA_HOST=%q: the kubelet and the Service reach the pod's IP, not loopback", env["LAYA_HOST"])
	}

	s, err := New(DefaultConfig(), &fakeModels{})
	if err != nil {
		t.Fatal(err)
	}
	served := func(method, path string) bool {
		req := httptest.NewRequest(method, path, nil)
		req.RemoteAddr = "127.0.0.1:5000" // where a probe or a preStop hook comes from
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec.Code != 404 && rec.Code != 405
	}
	for probe, want := range map[string]string{"readinessProbe": "/ready", "livenessProbe": "/health", "startupProbe": "/health"} {
		path, _ := at(c, probe, "httpGet", "path").(string)
		if path != want || !served("GET", path) {
			t.Errorf("%s on %q, want GET %s (a route the server answers)", probe, path, want)
		}
		if p := at(c, probe, "httpGet", "port"); p != portName && p != port {
			t.Errorf("%s on port %v, want %s", probe, p, portName)
		}
	}

	// preStop: POST /drain on the container's port, then a wait, with the binary the
	// image holds (it has no shell).
	var cmd []string
	for _, a := range at(c, "lifecycle", "preStop", "exec", "command").([]any) {
		cmd = append(cmd, a.(string))
	}
	if len(cmd) < 2 || cmd[0] != dockerBinary(t) || cmd[1] != "probe" || !slices.Contains(cmd, "--post") {
		t.Fatalf("preStop %q, want %s probe --post --url …/drain", cmd, dockerBinary(t))
	}
	var drainURL string
	var wait time.Duration
	for i := range cmd[:len(cmd)-1] {
		switch cmd[i] {
		case "--url":
			drainURL = cmd[i+1]
		case "--wait":
			wait, err = time.ParseDuration(cmd[i+1])
			if err != nil {
				t.Errorf("preStop --wait %q: %v", cmd[i+1], err)
			}
		}
	}
	if drainURL != "http://127.0.0.1:"+env["LAYA_PORT"]+"/drain" || !served("POST", "/drain") {
		t.Errorf("preStop drains %q, want POST http://127.0.0.1:%s/drain", drainURL, env["LAYA_PORT"])
	}
	grace, _ := at(pod, "terminationGracePeriodSeconds").(int)
	if need := cfg.ShutdownGrace + wait + 5*time.Second; time.Duration(grace)*time.Second < need {
		t.Errorf("terminationGracePeriodSeconds %d < LAYA_SHUTDOWN_GRACE_S %v + preStop wait %v + 5 s", grace, cfg.ShutdownGrace, wait)
	}
	if at(pod, "securityContext", "runAsNonRoot") != true || at(c, "securityContext", "allowPrivilegeEscalation") != false {
		t.Error("the pod must run as non-root without privilege escalation")
	}
	if at(c, "resources", "requests", "memory") == nil || at(c, "resources", "limits", "memory") == nil {
		t.Error("no memory request and limit")
	}

	labels := at(dep, "spec", "template", "metadata", "labels").(map[string]any)
	selects := func(sel any) bool {
		m, _ := sel.(map[string]any)
		for k, v := range m {
			if labels[k] != v {
				return false
			}
		}
		return len(m) > 0
	}
	svc := docs["Service/laya"]
	if !selects(at(svc, "spec", "selector")) || at(svc, "spec", "ports", 0, "targetPort") != portName {
		t.Errorf("Service laya: selector %v, targetPort %v; want the pods' labels and %s", at(svc, "spec", "selector"), at(svc, "spec", "ports", 0, "targetPort"), portName)
	}
	if !selects(at(dep, "spec", "selector", "matchLabels")) {
		t.Error("the Deployment's selector does not match its pods")
	}
	hpa := docs["HorizontalPodAutoscaler/laya"]
	if at(hpa, "spec", "scaleTargetRef", "kind") != "Deployment" || at(hpa, "spec", "scaleTargetRef", "name") != "laya" {
		t.Errorf("the HPA scales %v", at(hpa, "spec", "scaleTargetRef"))
	}
	// LAYA_STATE_URL names the Redis Service and its port.
	redisURL := env["LAYA_STATE_URL"]
	rsvc := docs["Service/laya-redis"]
	want := "redis://" + at(rsvc, "metadata", "name").(string) + ":" + strconv.Itoa(at(rsvc, "spec", "ports", 0, "port").(int)) + "/"
	if !strings.HasPrefix(redisURL, want) || docs["Deployment/laya-redis"] == nil {
		t.Errorf("LAYA_STATE_URL %q, want %s… (the laya-redis Service)", redisURL, want)
	}
	claim, _ := at(pod, "volumes", 0, "persistentVolumeClaim", "claimName").(string)
	if docs["PersistentVolumeClaim/"+claim] == nil {
		t.Errorf("the checkpoint volume claims %q, which no manifest defines", claim)
	}
	kust := docs["Kustomization/"]
	files, _ := filepath.Glob("../deploy/kubernetes/*.yaml")
	for _, f := range files {
		if base := filepath.Base(f); base != "kustomization.yaml" && !slices.Contains(at(kust, "resources").([]any), any(base)) {
			t.Errorf("kustomization.yaml leaves out %s", base)
		}
	}
}

// dockerfile is the Dockerfile's instructions, continuation lines joined.
func dockerfile(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	var cur string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && cur == "") {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			cur += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		out = append(out, strings.TrimSpace(cur+line))
		cur = ""
	}
	return out
}

// dockerBinary is where the image puts laya.
func dockerBinary(t *testing.T) string {
	for _, ins := range dockerfile(t) {
		if f := strings.Fields(ins); len(f) == 4 && f[0] == "COPY" && strings.HasPrefix(f[1], "--from=") {
			return f[3]
		}
	}
	t.Fatal("the Dockerfile copies no binary from its build stage")
	return ""
}

// TestDockerfile: multi-stage, a static binary (CGO_ENABLED=0) on distroless/static,
// non-root, a HEALTHCHECK through the binary on the port it serves. With a Docker
// daemon (not on the machines this was written on) it also builds the image.
func TestDockerfile(t *testing.T) {
	ins := dockerfile(t)
	var froms []string
	var final []string
	for _, i := range ins {
		if strings.HasPrefix(i, "FROM ") {
			froms = append(froms, i)
			final = nil
		}
		final = append(final, i)
	}
	if len(froms) < 2 || !strings.Contains(froms[len(froms)-1], "gcr.io/distroless/static") {
		t.Errorf("FROM lines %q: want a build stage and a distroless/static final stage", froms)
	}
	joined := strings.Join(ins, "\n")
	if !strings.Contains(joined, "CGO_ENABLED=0 go build") {
		t.Error("the binary is not built with CGO_ENABLED=0: distroless/static has no libc")
	}
	has := func(prefix string) string {
		for _, i := range final {
			if strings.HasPrefix(i, prefix) {
				return i
			}
		}
		return ""
	}
	if u, _, _ := strings.Cut(strings.TrimPrefix(has("USER "), "USER "), ":"); u == "" || u == "root" || u == "0" {
		t.Errorf("final stage runs as %q, want a non-root user", u)
	}
	env := map[string]string{}
	for _, kv := range strings.Fields(strings.TrimPrefix(has("ENV "), "ENV ")) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	// Without --url, laya probe asks /health at LAYA_HOST:LAYA_PORT, so a container
	// run with another LAYA_PORT is probed where it listens; a URL here would pin
	// the port the image was built with.
	hc := has("HEALTHCHECK ")
	if !strings.Contains(hc, `"`+dockerBinary(t)+`", "probe"`) || strings.Contains(hc, "--url") || strings.Contains(hc, env["LAYA_PORT"]) {
		t.Errorf("HEALTHCHECK %q, want %s probe with no URL or port (it reads LAYA_PORT)", hc, dockerBinary(t))
	}
	if has("EXPOSE ") != "EXPOSE "+env["LAYA_PORT"] || env["LAYA_HOST"] != "0.0.0.0" {
		t.Errorf("EXPOSE %q with LAYA_PORT=%s, LAYA_HOST=%s", has("EXPOSE "), env["LAYA_PORT"], env["LAYA_HOST"])
	}
	if !strings.Contains(has("ENTRYPOINT "), `"serve"`) {
		t.Errorf("ENTRYPOINT %q does not run laya serve", has("ENTRYPOINT "))
	}
	if exec.Command("docker", "info").Run() != nil {
		t.Log("no Docker daemon here: the image was not built")
		return
	}
	if testing.Short() {
		t.Skip("docker build: not in -short")
	}
	out, err := exec.Command("docker", "build", "-q", "-t", "laya-test", "..").CombinedOutput()
	if err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
}
