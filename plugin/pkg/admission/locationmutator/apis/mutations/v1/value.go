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

package v1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
)

// Value is any JSON value. Numbers decode as int64 when they are integral
// and as float64 otherwise, the way unstructured Kubernetes objects hold
// them, so that an assigned 80 equals a containerPort of 80 in the object.
type Value struct {
	Value any
}

// UnmarshalJSON decodes any JSON value with numbers normalised. A number
// beyond float64's range is an error, as it is for encoding/json (and so
// for Gatekeeper).
func (v *Value) UnmarshalJSON(data []byte) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var raw any
	if err := d.Decode(&raw); err != nil {
		return err
	}
	norm, err := normalizeNumbers(raw)
	if err != nil {
		return err
	}
	v.Value = norm
	return nil
}

// MarshalJSON encodes the held value.
func (v Value) MarshalJSON() ([]byte, error) { return json.Marshal(v.Value) }

func normalizeNumbers(v any) (any, error) {
	var err error
	switch v := v.(type) {
	case json.Number:
		return normalizeNumber(v)
	case map[string]any:
		for k, e := range v {
			if v[k], err = normalizeNumbers(e); err != nil {
				return nil, err
			}
		}
	case []any:
		for i, e := range v {
			if v[i], err = normalizeNumbers(e); err != nil {
				return nil, err
			}
		}
	}
	return v, nil
}

// normalizeNumber gives an int64 for an integral number that fits one, the
// way unstructured objects hold integers, and a float64 otherwise.
func normalizeNumber(n json.Number) (any, error) {
	if i, err := n.Int64(); err == nil {
		return i, nil
	}
	f, err := n.Float64()
	if err != nil {
		return nil, fmt.Errorf("number %s is out of range", n)
	}
	if i, ok := FloatAsInt(f); ok {
		return i, nil
	}
	return f, nil
}

// FloatAsInt returns f as an int64 when it is one exactly. The range is
// tested before converting: Go leaves the conversion of a float outside
// int64's range to the platform. Values and the objects they are compared
// with or written into hold integers as int64, so every comparison of a
// number asks this one function.
func FloatAsInt(f float64) (int64, bool) {
	if f != math.Trunc(f) || f < -(1<<63) || f >= 1<<63 {
		return 0, false
	}
	return int64(f), true
}
