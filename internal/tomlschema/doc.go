// Package tomlschema reads a TOML schema off a Go struct tree through its
// toml tags, so that a config's error messages, did-you-mean suggestions
// and reference docs all derive from the struct that decodes it. It also
// indexes a TOML file by key path, because go-toml reports positions only
// for the errors its decoder finds itself.
//
// It knows nothing of any particular config: package config runs both the
// run config and the eval config through it.
package tomlschema
