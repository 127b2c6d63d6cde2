{{/* Names and labels. */}}
{{- define "agentyard.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "agentyard.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "agentyard.selectorLabels" -}}
app.kubernetes.io/name: {{ include "agentyard.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "agentyard.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "agentyard.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: agentyard
{{- end -}}

{{- define "agentyard.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "agentyard.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "agentyard.masterKeySecret" -}}
{{- default (printf "%s-master-key" (include "agentyard.fullname" .)) .Values.masterKey.existingSecret -}}
{{- end -}}

{{- define "agentyard.pglite" -}}
{{- if not .Values.database.existingSecret -}}true{{- end -}}
{{- end -}}

{{/*
Settings the schema cannot express: the embedded PGlite engine is one process's database, so it needs a
single replica and a volume that outlives the pod.
*/}}
{{- define "agentyard.validate" -}}
{{- if include "agentyard.pglite" . -}}
{{- if gt (int .Values.replicaCount) 1 -}}
{{- fail (printf "replicaCount=%d needs PostgreSQL: set database.existingSecret (the embedded PGlite engine serves one replica only)" (int .Values.replicaCount)) -}}
{{- end -}}
{{- if not .Values.persistence.enabled -}}
{{- fail "persistence.enabled=false needs PostgreSQL: set database.existingSecret (the embedded PGlite engine keeps its data on a PersistentVolumeClaim)" -}}
{{- end -}}
{{- end -}}
{{- if and .Values.ingress.enabled (not .Values.ingress.host) -}}
{{- fail "ingress.enabled=true needs ingress.host" -}}
{{- end -}}
{{- if not (gt (int .Values.operator.leaseDurationSeconds) (int .Values.operator.renewDeadlineSeconds)) -}}
{{- fail "operator.leaseDurationSeconds must be greater than operator.renewDeadlineSeconds" -}}
{{- end -}}
{{- if not (gt (mulf (float64 .Values.operator.retryPeriodSeconds) 1.2) 0.0) -}}
{{- fail "operator.retryPeriodSeconds must be positive" -}}
{{- end -}}
{{- if not (gt (float64 .Values.operator.renewDeadlineSeconds) (mulf (float64 .Values.operator.retryPeriodSeconds) 1.2)) -}}
{{- fail "operator.renewDeadlineSeconds must be greater than 1.2 × operator.retryPeriodSeconds" -}}
{{- end -}}
{{- end -}}
