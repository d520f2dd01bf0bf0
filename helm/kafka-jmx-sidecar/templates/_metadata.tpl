{{/*
metadata of every object the chart renders, as Bitnami's and prometheus-community's charts do:
  metadata:
    {{- include "kafka-jmx-sidecar.metadata" (dict "root" . "name" $name "namespace" $ns
          "component" "..." "labels" .Values.x.labels "annotations" .Values.x.annotations) | nindent 2 }}
Labels: commonLabels, then the object's own, then the chart's (its selectors rely on those, so
they win). Annotations: commonAnnotations, then the object's own.
*/}}
{{- define "kafka-jmx-sidecar.metadata" -}}
{{- $root := .root }}
{{- $labels := mergeOverwrite (deepCopy ($root.Values.commonLabels | default dict)) (deepCopy (.labels | default dict)) (include "kafka-jmx-sidecar.labels" $root | fromYaml) }}
{{- with .component }}
{{- $_ := set $labels "app.kubernetes.io/component" . }}
{{- end }}
{{- $annotations := mergeOverwrite (deepCopy ($root.Values.commonAnnotations | default dict)) (deepCopy (.annotations | default dict)) -}}
name: {{ .name }}
namespace: {{ .namespace | default $root.Release.Namespace }}
labels:
  {{- toYaml $labels | nindent 2 }}
{{- with $annotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* A pod template's labels: commonLabels, podLabels, then the selector's (which must match). */}}
{{- define "kafka-jmx-sidecar.podTemplateLabels" -}}
{{- $root := .root }}
{{- $labels := mergeOverwrite (deepCopy ($root.Values.commonLabels | default dict)) (deepCopy (.labels | default dict)) (include "kafka-jmx-sidecar.selectorLabels" $root | fromYaml) }}
{{- with .component }}
{{- $_ := set $labels "app.kubernetes.io/component" . }}
{{- end }}
{{- toYaml $labels }}
{{- end }}
