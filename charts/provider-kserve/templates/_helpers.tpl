{{/* Chart name, truncated to the 63 characters of a label value. */}}
{{- define "provider-kserve.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified app name: the release name when it already contains the chart name. */}}
{{- define "provider-kserve.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "provider-kserve.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "provider-kserve.selectorLabels" -}}
app.kubernetes.io/name: {{ include "provider-kserve.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "provider-kserve.labels" -}}
helm.sh/chart: {{ include "provider-kserve.chart" . }}
{{ include "provider-kserve.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: provider-kserve
{{- end }}

{{- define "provider-kserve.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "provider-kserve.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "provider-kserve.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag | toString) }}
{{- end }}
{{- end }}

{{/* The shared AI Gateway (Gateway, GatewayClass, EnvoyProxy, Certificate) name. */}}
{{- define "provider-kserve.aiGatewayName" -}}
{{- printf "%s-ai-gateway" (include "provider-kserve.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "provider-kserve.aiGatewayTLSSecretName" -}}
{{- default (printf "%s-tls" (include "provider-kserve.aiGatewayName" .)) .Values.aiGateway.tls.secretName }}
{{- end }}

{{- define "provider-kserve.aiGatewayScheme" -}}
{{- if .Values.aiGateway.tls.enabled }}https{{ else }}{{ .Values.aiGateway.scheme }}{{ end }}
{{- end }}

{{- define "provider-kserve.aiGatewayPort" -}}
{{- if .Values.aiGateway.tls.enabled }}443{{ else }}{{ .Values.aiGateway.listener.port }}{{ end }}
{{- end }}

{{/* The generated Provider spec document ({name, spec}); fails when `generate` was not run. */}}
{{- define "provider-kserve.generatedSpec" -}}
{{- $doc := .Files.Get "generated/provider-spec.yaml" | fromYaml }}
{{- if not (and $doc.name $doc.spec) }}
{{- fail "generated/provider-spec.yaml is missing or empty: run `provider-kserve generate`" }}
{{- end }}
{{- toYaml $doc }}
{{- end }}

{{/* Whether the API server serves the Prometheus Operator's PodMonitor. */}}
{{- define "provider-kserve.podMonitors" -}}
{{- if and .Values.metrics.podMonitor.enabled (.Capabilities.APIVersions.Has "monitoring.coreos.com/v1/PodMonitor") }}true{{ end }}
{{- end }}
