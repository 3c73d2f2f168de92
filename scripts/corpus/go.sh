# Sourced by scripts/failures.sh (uses its case_dir and capture): Go's
# everyday failures — go test, go vet, go build, go run, gofmt — with
# Debian's golang-go (no modules are downloaded: the projects use only the
# standard library).
# Sourced, so $work and the helpers come from failures.sh; the projects'
# sources are quoted literally on purpose.
# shellcheck shell=bash disable=SC2016,SC2154

# gomod NAME: a go.mod for module NAME.
gomod() {
  printf 'module example.com/%s\n\ngo 1.19\n' "$1" >go.mod
}

if case_dir go-test-fatalf; then
  gomod config
  printf 'package config\n\nimport "strings"\n\nfunc Key(line string) string {\n\treturn strings.SplitN(line, "=", 2)[0]\n}\n' >config.go
  cat >config_test.go <<'GO'
package config

import "testing"

func TestKeyTrimsSpaces(t *testing.T) {
	if got := Key(" port = 80"); got != "port" {
		t.Fatalf("Key() = %q, want %q", got, "port")
	}
}

func TestKeyWithoutValue(t *testing.T) {
	if got := Key("debug"); got != "debug" {
		t.Fatalf("Key() = %q", got)
	}
}
GO
  capture go-test-fatalf test_failure 'go test ./...' 'TestKeyTrimsSpaces' 'config_test.go:7' \
    finding=config_test.go:7
fi
if case_dir go-test-subtests; then
  gomod table
  printf 'package table\n\nfunc Abs(x int) int {\n\tif x < -1 {\n\t\treturn -x\n\t}\n\treturn x\n}\n' >abs.go
  cat >abs_test.go <<'GO'
package table

import "testing"

func TestAbs(t *testing.T) {
	cases := []struct {
		name string
		in   int
		want int
	}{
		{"positive", 3, 3},
		{"minus_one", -1, 1},
		{"negative", -5, 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Abs(c.in); got != c.want {
				t.Errorf("Abs(%d) = %d, want %d", c.in, got, c.want)
			}
		})
	}
}
GO
  capture go-test-subtests test_failure 'go test -v ./...' 'TestAbs/minus_one' 'abs_test.go:18' known_miss
fi
if case_dir go-test-panic; then
  gomod cache
  printf 'package cache\n\nvar store map[string]int\n\nfunc Put(k string, v int) {\n\tstore[k] = v\n}\n' >cache.go
  printf 'package cache\n\nimport "testing"\n\nfunc TestPut(t *testing.T) {\n\tPut("a", 1)\n}\n' >cache_test.go
  capture go-test-panic test_failure 'go test ./...' 'TestPut' 'assignment to entry in nil map'
fi
if case_dir go-test-build-failed; then
  gomod shapes
  printf 'package shapes\n\nfunc Area(w, h float64) float64 {\n\treturn w * h\n}\n' >shapes.go
  printf 'package shapes\n\nimport "testing"\n\nfunc TestArea(t *testing.T) {\n\tif Area(2, 3) != Perimeter(2, 3) {\n\t\tt.Skip()\n\t}\n}\n' >shapes_test.go
  capture go-test-build-failed build_failure 'go test ./...' 'shapes_test.go:6' 'undefined: Perimeter'
fi
if case_dir go-test-timeout; then
  gomod worker
  printf 'package worker\n\nimport "testing"\n\nfunc TestDrain(t *testing.T) {\n\tch := make(chan int)\n\t<-ch\n}\n' >worker_test.go
  capture go-test-timeout timeout 'go test -timeout 2s ./...' 'TestDrain' 'timed out'
fi
if case_dir go-vet-copylocks; then
  gomod vetme
  cat >main.go <<'GO'
package main

import (
	"fmt"
	"sync"
)

type counter struct {
	mu sync.Mutex
	n  int
}

func show(c counter) { fmt.Println(c.n) }

func main() {
	var c counter
	show(c)
}
GO
  capture go-vet-copylocks lint_failure 'go vet ./...' 'main.go:13' 'passes lock by value'
fi
if case_dir go-build-unused-import; then
  gomod unused
  printf 'package main\n\nimport (\n\t"fmt"\n\t"os"\n)\n\nfunc main() {\n\tfmt.Println("hi")\n}\n' >main.go
  capture go-build-unused-import build_failure 'go build ./...' 'main.go:5' '"os"' 'not used'
fi
if case_dir go-build-type-mismatch; then
  gomod types
  printf 'package main\n\nimport "fmt"\n\nfunc port() int {\n\treturn "8080"\n}\n\nfunc main() {\n\tfmt.Println(port())\n}\n' >main.go
  capture go-build-type-mismatch build_failure 'go build .' 'main.go:6' finding=main.go:6
fi
if case_dir go-run-index-panic; then
  gomod args
  printf 'package main\n\nimport (\n\t"fmt"\n\t"os"\n)\n\nfunc main() {\n\tfmt.Println("first arg:", os.Args[1])\n}\n' >main.go
  capture go-run-index-panic runtime_error 'go run .' 'index out of range' 'main.go:9'
fi
if case_dir go-gofmt-list; then
  gomod fmtme
  printf 'package main\nimport "fmt"\nfunc main(){\nfmt.Println( "x" )\n}\n' >main.go
  capture go-gofmt-list lint_failure 'test -z "$(gofmt -l .)" || { gofmt -l .; exit 1; }' 'main.go' known_miss
fi
if case_dir go-no-go-files; then
  gomod empty
  mkdir docs && echo '# docs' >docs/README.md
  capture go-no-go-files spec_mismatch 'go test ./docs' 'no Go files'
fi
