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

package fuzzobjectstest

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
	mutationsv1alpha1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1alpha1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/path"
)

// The mutator generators build Gatekeeper manifests from the names of
// real Pod and Deployment fields (and a few wrong ones), so that most of
// them fit the types, while the rest exercise fields the type lacks and
// values it cannot hold.

var (
	typedApplyTo = []mutationsv1.ApplyTo{
		{Groups: []string{""}, Versions: []string{"v1"}, Kinds: []string{"Pod"}},
		{Groups: []string{"apps"}, Versions: []string{"v1"}, Kinds: []string{"Deployment"}},
	}
	// fields that hold objects, lists of objects, and values, with the key
	// fields the lists are selected by.
	typedObjects    = []string{"securityContext", "resources", "dnsConfig", "affinity", "metadata", "template", "spec", "bogus"}
	typedLists      = []string{"containers", "initContainers", "env", "ports", "volumes", "tolerations", "args", "imagePullSecrets"}
	typedKeys       = []string{"name", "containerPort", "key", "name", "protocol"}
	typedKeyValues  = []any{"app", "proxy", "sidecar", "A", int64(80), int64(8080), "80", int64(1) << 40, ""}
	typedLeaves     = []string{"image", "imagePullPolicy", "args", "command", "value", "name", "runAsNonRoot", "runAsUser", "allowPrivilegeEscalation", "terminationGracePeriodSeconds", "hostname", "nodeSelector", "replicas", "protocol", "containerPort", "workingDir", "limits", "priority", "labels", "paused", "bogus"}
	typedLabelNames = []string{"app", "owner", "tier"}
	// favoured are the fields the tests care about.
	favoured = "spec template containers initContainers image imagePullPolicy args command env value securityContext runAsNonRoot allowPrivilegeEscalation terminationGracePeriodSeconds nodeSelector labels annotations ports protocol replicas"
)

// Mutators makes mutators for pods (and, with Deployment, deployments);
// one time in three a mutator takes the previous one's location, so that
// mutators meet (and sometimes fight) on one field.
type Mutators struct {
	*Source
	// Deployment aims the locations at a Deployment's fields rather than
	// a Pod's.
	Deployment bool
	prevLoc    string
	prevLeaf   reflect.Type
	hasPrev    bool
}

// group is the API group of the mutator kinds.
const group = "mutations.gatekeeper.sh"

// Mutator is an Assign, ModifySet, AssignImage (a *mutationsv1alpha1
// type) or AssignMetadata named "m" followed by the letter i counts from
// a, for pods and deployments of every namespace, with its apiVersion and
// kind. The manifest may be one the server refuses.
func (g *Mutators) Mutator(i int) any {
	meta := metav1.ObjectMeta{Name: "m" + string(rune('a'+i))}
	loc, leaf := g.location()
	if g.hasPrev && g.Next(3) == 1 {
		loc, leaf = g.prevLoc, g.prevLeaf
	}
	g.prevLoc, g.prevLeaf, g.hasPrev = loc, leaf, true
	tests := PathTests(g.Source, loc)
	switch g.Next(6) {
	case 0, 1:
		field := mutationsv1.AssignField{Value: &mutationsv1.Value{Value: g.fittingValue(leaf)}}
		if g.Next(4) == 1 {
			field = mutationsv1.AssignField{FromMetadata: &mutationsv1.FromMetadata{Field: []string{"name", "namespace"}[g.Next(2)]}}
		}
		return &mutationsv1.Assign{TypeMeta: typeMeta("v1", mutationsv1.KindAssign), ObjectMeta: meta, Spec: mutationsv1.AssignSpec{ApplyTo: typedApplyTo, Location: loc,
			Parameters: mutationsv1.AssignParameters{PathTests: tests, Assign: field}}}
	case 2:
		return ModifySet(g.Source, meta, typedApplyTo, loc, tests, func() any {
			v := any([]string{"--v=2", "-x", "a", ""}[g.Next(4)])
			if g.Next(8) == 0 {
				v = g.value(1)
			}
			return v
		})
	case 3:
		return &mutationsv1alpha1.AssignImage{TypeMeta: typeMeta("v1alpha1", mutationsv1.KindAssignImage), ObjectMeta: meta, Spec: mutationsv1.AssignImageSpec{ApplyTo: typedApplyTo, Location: loc,
			Parameters: mutationsv1.AssignImageParameters{PathTests: tests, AssignDomain: []string{"", "r.io"}[g.Next(2)], AssignTag: []string{":v1", ""}[g.Next(2)], AssignPath: []string{"", "lib/app"}[g.Next(2)]}}}
	default:
		return g.assignMetadata(meta)
	}
}

func (g *Mutators) assignMetadata(meta metav1.ObjectMeta) *mutationsv1.AssignMetadata {
	var field mutationsv1.AssignField
	if g.Next(3) == 0 {
		field = mutationsv1.AssignField{FromMetadata: &mutationsv1.FromMetadata{Field: []string{"name", "namespace"}[g.Next(2)]}}
	} else {
		field = mutationsv1.AssignField{Value: &mutationsv1.Value{Value: []string{"v", "", "platform"}[g.Next(3)]}}
	}
	return &mutationsv1.AssignMetadata{TypeMeta: typeMeta("v1", mutationsv1.KindAssignMetadata), ObjectMeta: meta, Spec: mutationsv1.AssignMetadataSpec{
		Location:   "metadata." + []string{"labels", "annotations"}[g.Next(2)] + "." + typedLabelNames[g.Next(len(typedLabelNames))],
		Parameters: mutationsv1.MetadataParameters{Assign: field}}}
}

// PathTests gives loc, one time in three, a pathTest on one of its
// prefixes, either condition.
func PathTests(s *Source, loc string) []mutationsv1.PathTest {
	p, err := path.Parse(loc)
	if err != nil || s.Next(3) != 0 {
		return nil
	}
	d := s.Next(len(p.Nodes))
	cond := mutationsv1.MustExist
	if s.Next(2) == 0 {
		cond = mutationsv1.MustNotExist
	}
	return []mutationsv1.PathTest{{SubPath: path.Path{Nodes: p.Nodes[:d+1]}.String(), Condition: cond}}
}

// ModifySet is a ModifySet of one to three values from value, merging or
// pruning as s says.
func ModifySet(s *Source, meta metav1.ObjectMeta, applyTo []mutationsv1.ApplyTo, loc string, tests []mutationsv1.PathTest, value func() any) *mutationsv1.ModifySet {
	var vals []mutationsv1.Value
	for j := s.Next(3); j >= 0; j-- {
		vals = append(vals, mutationsv1.Value{Value: value()})
	}
	op := mutationsv1.OperationMerge
	if s.Next(2) == 0 {
		op = mutationsv1.OperationPrune
	}
	return &mutationsv1.ModifySet{TypeMeta: typeMeta("v1", mutationsv1.KindModifySet), ObjectMeta: meta, Spec: mutationsv1.ModifySetSpec{ApplyTo: applyTo, Location: loc,
		Parameters: mutationsv1.ModifySetParameters{PathTests: tests, Operation: op, Values: mutationsv1.Values{FromList: vals}}}}
}

func typeMeta(version, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: group + "/" + version, Kind: kind}
}
