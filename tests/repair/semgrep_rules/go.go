package fixtures

import (
	"crypto/md5"
	"crypto/sha256"
	"crypto/tls"
	"os"
	"strconv"
)

func hashes(data []byte) {
	// ruleid: go.weak-md5
	h := md5.New()
	// ruleid: go.weak-md5
	sum := md5.Sum(data)
	// ok: go.weak-md5
	good := sha256.Sum256(data)
	_, _, _ = h, sum, good
}

func configs() *tls.Config {
	// ruleid: go.tls-insecure-skip-verify
	bad := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true}
	// ok: go.tls-insecure-skip-verify
	good := &tls.Config{MinVersion: tls.VersionTLS12}
	// ruleid: go.tls-insecure-skip-verify
	good.InsecureSkipVerify = true
	// ok: go.tls-insecure-skip-verify
	good.InsecureSkipVerify = false
	_ = bad
	return good
}

func errors(path string) int {
	// ruleid: go.ignored-error
	_ = os.Remove(path)
	// ruleid: go.ignored-error
	n, _ := strconv.Atoi(path)
	// ok: go.ignored-error
	if err := os.Remove(path); err != nil {
		return -1
	}
	// ok: go.ignored-error
	_ = n
	// ok: go.ignored-error
	m, err := strconv.Atoi(path)
	if err != nil {
		return -1
	}
	return n + m
}
