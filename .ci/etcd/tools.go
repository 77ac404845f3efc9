//go:build tools

// Package tools pins etcd's server for the tests: `go install go.etcd.io/etcd/server/v3@v3.6.6`
// is refused (its go.mod has replace directives), so .ci/run builds it from this module, whose
// go.sum fixes every dependency.
package tools

import _ "go.etcd.io/etcd/server/v3"
