{{/* Names, as `helm create` makes them: a release named farm-apiserver gives app.yaml's names. */}}
{{- define "farm-apiserver.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "farm-apiserver.fullname" -}}
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

{{- define "farm-apiserver.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "farm-apiserver.selectorLabels" -}}
app.kubernetes.io/name: {{ include "farm-apiserver.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "farm-apiserver.labels" -}}
helm.sh/chart: {{ include "farm-apiserver.chart" . }}
{{ include "farm-apiserver.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "farm-apiserver.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "farm-apiserver.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The serving certificate's Secret (kubernetes.io/tls with ca.crt), whichever way it is made. */}}
{{- define "farm-apiserver.tlsSecretName" -}}
{{- printf "%s-tls" (include "farm-apiserver.fullname" .) }}
{{- end }}

{{/* What the aggregator dials and verifies: <service>.<namespace>.svc (kube-aggregator's ServerName). */}}
{{- define "farm-apiserver.dnsNames" -}}
{{- $svc := include "farm-apiserver.fullname" . }}
{{- $ns := .Release.Namespace }}
{{- list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.%s" $svc $ns .Values.certificates.clusterDomain) | toJson }}
{{- end }}

{{/* The cert-manager Certificate for serving (its Secret is the TLS Secret; cainjector reads it). */}}
{{- define "farm-apiserver.servingCertificateName" -}}
{{- printf "%s-serving" (include "farm-apiserver.fullname" .) }}
{{- end }}

{{/* Values that cannot work together stop the render with one line saying why. */}}
{{- define "farm-apiserver.validate" -}}
{{- $v := .Values }}
{{- if and (gt (int $v.replicas) 1) (ne $v.storage.backend "etcd3") }}
{{- fail "replicas above 1 need storage.backend=etcd3 (in-memory replicas would each hold different llamas)" }}
{{- end }}
{{- if and (eq $v.storage.backend "etcd3") (empty $v.storage.etcd.servers) }}
{{- fail "storage.backend=etcd3 needs storage.etcd.servers (etcd client URLs)" }}
{{- end }}
{{- if and (ne $v.storage.backend "etcd3") (or $v.storage.etcd.servers $v.storage.etcd.tls.secretName) }}
{{- fail "storage.etcd.* is set but storage.backend is not etcd3" }}
{{- end }}
{{- if and $v.externalServer.enabled (empty $v.externalServer.host) }}
{{- fail "externalServer.enabled needs externalServer.host (the DNS name the aggregator dials)" }}
{{- end }}
{{- if and $v.externalServer.enabled $v.serviceMonitor.enabled }}
{{- fail "serviceMonitor needs the in-cluster Deployment (an ExternalName Service has no endpoints to scrape); turn off externalServer or serviceMonitor" }}
{{- end }}
{{- end }}
