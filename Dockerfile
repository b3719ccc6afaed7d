# laya serve in a container: a static Go binary (no cgo) on distroless/static, run
# as the image's non-root user. The checkpoint is mounted at /models/english (see
# deploy/kubernetes/ and the README's "Container" section, which also shows how to
# bake one in).
#
#   docker build -t laya .
#   docker run --rm -p 8642:8642 -v "$PWD/testdata/oracle/checkpoints/real-en:/models/english:ro" laya

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/laya ./cmd/laya

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/laya /laya
ENV LAYA_HOST=0.0.0.0 LAYA_PORT=8642 LAYA_LOG_FORMAT=json
EXPOSE 8642
USER nonroot:nonroot
# No shell or curl in the image: the binary probes itself, at LAYA_HOST:LAYA_PORT
# (docker run -e LAYA_PORT=9000 moves the probe with the server).
HEALTHCHECK --interval=10s --timeout=5s --start-period=120s --retries=3 \
  CMD ["/laya", "probe"]
ENTRYPOINT ["/laya", "serve"]
CMD ["--model", "/models/english"]
