/*
Copyright The admitkit Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package path

import (
	"errors"
	"strings"
	"testing"
)

func o(name string) Node { return Object{Reference: name} }
func ls(key, value string) Node {
	return List{KeyField: key, KeyValue: value}
}
func li(key string, value int64) Node { return List{KeyField: key, KeyValue: value} }
func lg(key string) Node              { return List{KeyField: key, Glob: true} }

type parseCase struct {
	input   string
	want    []Node
	wantErr error
}

func runParseCases(t *testing.T, cases []parseCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.input, func(t *testing.T) {
			got, err := Parse(tc.input)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Parse(%q) error = %v, want %v", tc.input, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.input, err)
			}
			if !got.Equal(Path{Nodes: tc.want}) {
				t.Fatalf("Parse(%q) = %#v, want %#v", tc.input, got.Nodes, tc.want)
			}
			again, err := Parse(got.String())
			if err != nil {
				t.Fatalf("printed form %q does not parse: %v", got.String(), err)
			}
			if !again.Equal(got) {
				t.Fatalf("printed form %q parses to %#v, want %#v", got.String(), again.Nodes, got.Nodes)
			}
		})
	}
}

// The cases of the spec's section 1.6, reworded.
func TestParseGrammar(t *testing.T) {
	runParseCases(t, []parseCase{
		{input: ""},
		{input: ".spec", wantErr: errUnexpectedToken},
		{input: "spec.", wantErr: errTrailingSeparator},
		{input: `"sp\"ec"`, want: []Node{o(`sp"ec`)}},
		{input: "single_field", want: []Node{o("single_field")}},
		{input: "spec.containers[name: *].securityContext", want: []Node{o("spec"), o("containers"), lg("name"), o("securityContext")}},
		{input: `spec.containers[name: "*"].securityContext`, want: []Node{o("spec"), o("containers"), ls("name", "*"), o("securityContext")}},
		{input: "spec.containers[name: foo].securityContext", want: []Node{o("spec"), o("containers"), ls("name", "foo"), o("securityContext")}},
		{input: `spec.containers["my key": "foo bar"]`, want: []Node{o("spec"), o("containers"), ls("my key", "foo bar")}},
		{input: `spec.containers[my key: "foo bar"]`, wantErr: errUnexpectedToken},
		{input: `spec.containers[key: foo bar]`, wantErr: errUnexpectedToken},
		{input: `spec.containers[name: ""].securityContext`, want: []Node{o("spec"), o("containers"), ls("name", ""), o("securityContext")}},
		{input: `spec.containers["": "someValue"].securityContext`, want: []Node{o("spec"), o("containers"), ls("", "someValue"), o("securityContext")}},
		{input: "spec.containers[name: ].securityContext", wantErr: errUnexpectedToken},
		{input: "spec.containers[].securityContext", wantErr: errUnexpectedToken},
		{input: "spec.containers[:].securityContext", wantErr: errUnexpectedToken},
		{input: "spec.containers[:foo].securityContext", wantErr: errUnexpectedToken},
		{input: "spec.containers[foo].securityContext", wantErr: errUnexpectedToken},
		{input: "spec.containers[*].securityContext", wantErr: errUnexpectedToken},
		{input: "foo..bar", wantErr: errUnexpectedToken},
		{input: `foo."".bar`, want: []Node{o("foo"), o(""), o("bar")}},
		{input: "    spec   .    containers    ", want: []Node{o("spec"), o("containers")}},
		{input: `    spec   .    "containers"    `, want: []Node{o("spec"), o("containers")}},
		{input: "[foo: bar]", wantErr: errUnexpectedToken},
		{input: "[foo: bar][bar: *]", wantErr: errUnexpectedToken},
		{input: "spec.containers[foo: bar][bar: *]", wantErr: errUnexpectedToken},
		{input: "spec.[foo: bar]", wantErr: errUnexpectedToken},
		{input: "spec.containers[name: opa].ports[containerPort: 8888].name", want: []Node{o("spec"), o("containers"), ls("name", "opa"), o("ports"), li("containerPort", 8888), o("name")}},
		{input: "spec.containers[123: opa]", wantErr: errUnexpectedToken},
		{input: "spec[bignum: 9223372036854775807]", want: []Node{o("spec"), li("bignum", 9223372036854775807)}},
		{input: "spec[bignum: 9223372036854775808]", wantErr: errInvalidInteger},
		{input: `spec[quoted: "123"]`, want: []Node{o("spec"), ls("quoted", "123")}},
		{input: "-123-_456_", want: []Node{o("-123-_456_")}},
		{input: "area51", want: []Node{o("area51")}},
		{input: "012345", wantErr: errUnexpectedToken},
		{input: "spec.123.bar", wantErr: errUnexpectedToken},
		{input: `"012345"`, want: []Node{o("012345")}},
		{input: `spec."123"`, want: []Node{o("spec"), o("123")}},
		{input: "spec.studio54.bar", want: []Node{o("spec"), o("studio54"), o("bar")}},
		{input: "spec[foo: 0x123]", wantErr: errUnexpectedToken},
		{input: "spec[not_octal: 0123]", want: []Node{o("spec"), li("not_octal", 123)}},
		{input: "spec.foo bar", wantErr: errUnexpectedToken},
		{input: `spec."foo bar"`, want: []Node{o("spec"), o("foo bar")}},
		{input: "spec.\"foo\nbar\"", want: []Node{o("spec"), o("foo\nbar")}},
		{input: "*", wantErr: errUnexpectedToken},
		{input: "][", wantErr: errUnexpectedToken},
		{input: "foo[", wantErr: errUnexpectedToken},
		{input: "[", wantErr: errUnexpectedToken},
		{input: ":", wantErr: errUnexpectedToken},
		{input: `spec."this object"."is very"["much full": 'of everyone\'s'].'favorite thing'`, want: []Node{o("spec"), o("this object"), o("is very"), ls("much full", "of everyone's"), o("favorite thing")}},
		{input: `"token-with-trailing-backslash\\"`, want: []Node{o(`token-with-trailing-backslash\`)}},
		{input: `"token-with-\\embedded-backslash"`, want: []Node{o(`token-with-\embedded-backslash`)}},
		{input: `'foo[bar: baz]'`, want: []Node{o("foo[bar: baz]")}},
		{input: `'foo[bar:baz]'`, want: []Node{o("foo[bar:baz]")}},
		{input: `'foo[bar:*]'`, want: []Node{o("foo[bar:*]")}},
		{input: `'dot..dot'`, want: []Node{o("dot..dot")}},
	})
}

// The example strings of the spec's section 1.4.
func TestParseExamples(t *testing.T) {
	runParseCases(t, []parseCase{
		{input: "spec.containers[name: *].imagePullPolicy", want: []Node{o("spec"), o("containers"), lg("name"), o("imagePullPolicy")}},
		{input: "spec.containers[name:*].imagePullPolicy", want: []Node{o("spec"), o("containers"), lg("name"), o("imagePullPolicy")}},
		{input: "spec.containers[name: foo]", want: []Node{o("spec"), o("containers"), ls("name", "foo")}},
		{input: "spec.containers[name: *]", want: []Node{o("spec"), o("containers"), lg("name")}},
		{input: `spec.containers[name: "*"]`, want: []Node{o("spec"), o("containers"), ls("name", "*")}},
		{input: "spec.containers[*].image", wantErr: errUnexpectedToken},
		{input: "spec.containers[].image", wantErr: errUnexpectedToken},
		{input: "spec.containers[0].image", wantErr: errUnexpectedToken},
		{input: "spec.containers.image", want: []Node{o("spec"), o("containers"), o("image")}},
		{input: "spec.containers[name: foo][port: 80]", wantErr: errUnexpectedToken},
		{input: "spec.containers[name: *].ports[containerPort: 80].protocol", want: []Node{o("spec"), o("containers"), lg("name"), o("ports"), li("containerPort", 80), o("protocol")}},
		{input: "spec.containers[name: *].ports[name: *].protocol", want: []Node{o("spec"), o("containers"), lg("name"), o("ports"), lg("name"), o("protocol")}},
		{input: "spec.template.spec.containers[name: nginx].env[name: FOO].value", want: []Node{o("spec"), o("template"), o("spec"), o("containers"), ls("name", "nginx"), o("env"), ls("name", "FOO"), o("value")}},
		{input: "metadata.labels.app", want: []Node{o("metadata"), o("labels"), o("app")}},
		{input: `metadata.labels."app.kubernetes.io/name"`, want: []Node{o("metadata"), o("labels"), o("app.kubernetes.io/name")}},
		{input: `metadata.annotations.'eks.amazonaws.com/role-arn'`, want: []Node{o("metadata"), o("annotations"), o("eks.amazonaws.com/role-arn")}},
		{input: "metadata.labels.app.kubernetes.io/name", wantErr: errUnexpectedToken},
		{input: "metadata.labels.123", wantErr: errUnexpectedToken},
		{input: `"metadata".labels.x`, want: []Node{o("metadata"), o("labels"), o("x")}},
		{input: "spec.containers[name: foo-bar_1].image", want: []Node{o("spec"), o("containers"), ls("name", "foo-bar_1"), o("image")}},
		{input: "spec.containers[name: foo.bar].image", wantErr: errUnexpectedToken},
		{input: `spec.containers[name: "foo.bar"].image`, want: []Node{o("spec"), o("containers"), ls("name", "foo.bar"), o("image")}},
		{input: "spec.containers[name: 1abc]", wantErr: errUnexpectedToken},
		{input: "spec.containers[name: -1]", want: []Node{o("spec"), o("containers"), ls("name", "-1")}},
		{input: "spec.containers[name: kube-*]", wantErr: errUnexpectedToken},
		{input: "spec.containers[name: true]", want: []Node{o("spec"), o("containers"), ls("name", "true")}},
		{input: `spec.containers["name": foo]`, want: []Node{o("spec"), o("containers"), ls("name", "foo")}},
		{input: "spec[x: y]", want: []Node{o("spec"), ls("x", "y")}},
		{input: `spec["x"]`, wantErr: errUnexpectedToken},
		{input: "spec.*.image", wantErr: errUnexpectedToken},
		{input: "spec.con*", wantErr: errUnexpectedToken},
		{input: `spec.containers[name: 'it\'s']`, want: []Node{o("spec"), o("containers"), ls("name", "it's")}},
		{input: `spec.x\.y`, wantErr: errUnexpectedToken},
		{input: `"a\nb"`, want: []Node{o("anb")}},
		{input: "ünicode", wantErr: errUnexpectedToken},
		{input: `"ünicode"`, want: []Node{o("ünicode")}},
		{input: "spec.", wantErr: errTrailingSeparator},
		{input: ".spec", wantErr: errUnexpectedToken},
		{input: "spec..x", wantErr: errUnexpectedToken},
		{input: "spec.containers[name: foo]bar", wantErr: errUnexpectedToken},
		{input: "   "},
		{input: `"unterminated`, wantErr: errUnexpectedToken},
		{input: `"one"two`, wantErr: errUnexpectedToken},
	})
}

func TestErrorMessagesNameTokens(t *testing.T) {
	_, err := Parse("spec.containers[name: foo]bar")
	if err == nil || !strings.Contains(err.Error(), `IDENT("bar")`) || !strings.Contains(err.Error(), `expected "." or EOF`) {
		t.Fatalf("error %v should name the expected and the received token", err)
	}
}

func TestString(t *testing.T) {
	tests := []struct {
		input, want string
	}{
		{"spec.containers[name:*].imagePullPolicy", "spec.containers[name: *].imagePullPolicy"},
		{`metadata.annotations.'eks.amazonaws.com/role-arn'`, `metadata.annotations."eks.amazonaws.com/role-arn"`},
		{`spec[port: "80"]`, `spec[port: "80"]`},
		{`spec[port: 0080]`, `spec[port: 80]`},
		{`spec[name: "*"]`, `spec[name: "*"]`},
		{`"ünicode"`, `"ünicode"`},
		{`'say "hi"\\'`, `"say \"hi\"\\"`},
		{`foo."".bar`, `foo."".bar`},
		{`"0abc"`, `"0abc"`},
		{`"a:b"`, `"a:b"`},
		{"", ""},
	}
	for _, tc := range tests {
		t.Run(tc.input, func(t *testing.T) {
			p, err := Parse(tc.input)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.String(); got != tc.want {
				t.Fatalf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{"abc": "abc", "a b": `"a b"`, "": `""`, "9": `"9"`, "é": `"é"`} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestHasPrefix(t *testing.T) {
	tests := []struct {
		prefix, path string
		want         bool
	}{
		{"a.b.c", "a.b.c.d", true},
		{"a.b.c", "a.b.c", true},
		{"a[name:b].c", "a[name:b].c", true},
		{`a[name:"b"]`, "a[name:b].c", true},
		{"a.b.q", "a.b.c.d", false},
		{"a[name:b].c", "a[name:b]", false},
		{`a[name:"r"]`, "a[name:b].c", false},
		{`a[otherthing:"b"]`, "a[name:b].c", false},
		{"a[name: *]", "a[name: b].c", false},
		{"a[name: *]", "a[name: *].c", true},
		{"a[port: 80]", `a[port: "80"]`, false},
		{"", "a.b", true},
	}
	for _, tc := range tests {
		t.Run(tc.prefix+" of "+tc.path, func(t *testing.T) {
			pre, err := Parse(tc.prefix)
			if err != nil {
				t.Fatal(err)
			}
			p, err := Parse(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			if got := HasPrefix(p, pre); got != tc.want {
				t.Fatalf("HasPrefix = %v, want %v", got, tc.want)
			}
		})
	}
}

// Only the first problem is reported, and only its sentinel matches.
func TestFirstErrorOnly(t *testing.T) {
	sentinels := []error{errUnexpectedToken, errTrailingSeparator, errInvalidInteger}
	tests := []struct {
		input string
		want  error
	}{
		{".spec[x: 99999999999999999999]", errUnexpectedToken},
		{"spec[x: 99999999999999999999].", errInvalidInteger},
		{"spec[x: 1]..", errUnexpectedToken},
		{"a.", errTrailingSeparator},
		{"a[b: *]'unterminated", errUnexpectedToken},
	}
	for _, tc := range tests {
		t.Run(tc.input, func(t *testing.T) {
			_, err := Parse(tc.input)
			for _, s := range sentinels {
				if errors.Is(err, s) != (s == tc.want) {
					t.Fatalf("Parse(%q) = %v: errors.Is(%v) = %v", tc.input, err, s, errors.Is(err, s))
				}
			}
		})
	}
}
