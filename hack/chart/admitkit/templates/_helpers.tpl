{{/* The image the Deployment runs. */}}
{{- define "admitkit.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* served: "true" if the plugin named by the argument is in .Values.plugins. */}}
{{- define "admitkit.served" -}}
{{- if has (index . 1) (index . 0).Values.plugins }}true{{ end }}
{{- end }}

{{/* The namespaces no webhook sees: excludedNamespaces and the release's. */}}
{{- define "admitkit.excluded" -}}
{{- $out := list }}
{{- range .Values.excludedNamespaces }}{{ $out = append $out . }}{{ end }}
{{- $out = append $out .Release.Namespace | uniq }}
{{- toJson $out }}
{{- end }}

{{/* The NodeRestriction webhook's matchCondition: the listed accounts' user names. */}}
{{- define "admitkit.nodeScopedUsers" -}}
{{- $users := list }}
{{- range .Values.nodeScopedServiceAccounts }}
{{- if or (not .namespace) (not .name) }}
{{- fail (printf "nodeScopedServiceAccounts: %v lacks namespace or name" .) }}
{{- end }}
{{- $users = append $users (printf "'system:serviceaccount:%s:%s'" .namespace .name) }}
{{- end }}
{{- printf "request.userInfo.username in [%s]" (join ", " $users) }}
{{- end }}

{{/* The webhook's Service, the same for every webhook. */}}
{{- define "admitkit.service" -}}
name: admitkit-webhook
namespace: {{ .Release.Namespace }}
{{- end }}

{{/* cert-manager's CA injector fills caBundle when it issues the certificate. */}}
{{- define "admitkit.webhookAnnotations" -}}
{{- if eq .Values.certificates.source "certManager" }}
annotations:
  cert-manager.io/inject-ca-from: {{ .Release.Namespace }}/admitkit-webhook
{{- end }}
{{- end }}
