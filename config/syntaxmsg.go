package config

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/grpo-dev/grpo/internal/tomlschema"
	"github.com/pelletier/go-toml/v2"
)

// nonASCIIKeyError explains go-toml's "expected '=' after key" when the
// cause is a bare key with a letter outside ASCII (`mäx = 1`), which TOML
// does not allow unquoted; ok is false for any other error.
func nonASCIIKeyError(name string, data []byte, err error) (error, bool) {
	var de *toml.DecodeError
	if !errors.As(err, &de) || !strings.Contains(de.Error(), "expected '=' after key") {
		return nil, false
	}
	line, _ := de.Position()
	lines := bytes.Split(data, []byte("\n"))
	if line < 1 || line > len(lines) {
		return nil, false
	}
	text := strings.TrimSpace(string(lines[line-1]))
	key, _, _ := strings.Cut(text, "=")
	key = strings.TrimSpace(key)
	for i, r := range key {
		if r >= utf8.RuneSelf {
			return fmt.Errorf(`%s:%d:%d: key %q: a bare TOML key may use only ASCII letters, digits, _ and -; quote it ("%s" = ...) or spell it in ASCII`,
				name, line, strings.Index(string(lines[line-1]), key)+i+1, key, key), true
		}
	}
	return nil, false
}

// evalTypeMsg rewrites go-toml's "cannot decode TOML string into struct
// field config.EvalFile.Seed of type int64" in the eval config's terms:
// the key, the type it wants and an example.
func evalTypeMsg(key []string, msg string) (string, bool) {
	m := gotKind.FindStringSubmatch(msg)
	t := evalSchema.Type(key)
	if m == nil || t == nil {
		return "", false
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	ex := map[reflect.Kind]string{reflect.Int: "1", reflect.Int64: "1", reflect.Float64: "0.5", reflect.String: `"..."`, reflect.Bool: "true"}[t.Kind()]
	fix := "write " + tomlschema.KindName(t)
	if ex != "" {
		fix += ", e.g. " + key[len(key)-1] + " = " + ex
	}
	return fmt.Sprintf("key %q: want %s, got a TOML %s; %s", tomlschema.DisplayKey(strings.Join(key, ".")), tomlschema.KindName(t), m[1], fix), true
}
