//go:build tools

// The programs .ci/run builds from this module: the API server and kubectl the Kubernetes tests
// run lila against, pinned by go.sum.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
