{{/* `kafka-jmx-sidecar backfill`'s arguments (after the command), for the Job and the SparkApplication. */}}
{{- define "kafka-jmx-sidecar.backfillArgs" -}}
{{- $b := .Values.backfill }}
- --input
{{- range $b.input.paths }}
- {{ printf "/data/input/%s" . | clean | quote }}
{{- end }}
- --output
- {{ printf "/data/output/%s" $b.output.path | clean | quote }}
- --semantics
- {{ $b.semantics | quote }}
- --step
- {{ $b.step | quote }}
{{- with $b.start }}
- --start
- {{ . | quote }}
{{- end }}
{{- with $b.end }}
- --end
- {{ . | quote }}
{{- end }}
{{- if $b.import.enabled }}
- --import
- {{ printf "/data/prometheus/%s" $b.import.path | clean | quote }}
{{- end }}
{{- range $k, $v := $b.sparkConf }}
- --conf
- {{ printf "%s=%v" $k $v | quote }}
{{- end }}
{{- with $b.extraArgs }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "kafka-jmx-sidecar.backfillVolumes" -}}
{{- $b := .Values.backfill }}
- name: input
  persistentVolumeClaim:
    claimName: {{ required "values: backfill.input.claimName: set the PersistentVolumeClaim holding the describe dumps" $b.input.claimName }}
    readOnly: true
- name: output
  persistentVolumeClaim:
    claimName: {{ required "values: backfill.output.claimName: set the PersistentVolumeClaim the OpenMetrics files go to" $b.output.claimName }}
{{- if $b.import.enabled }}
- name: prometheus-data
  persistentVolumeClaim:
    claimName: {{ required "values: backfill.import.claimName: --import writes into a Prometheus data directory; set its PersistentVolumeClaim" $b.import.claimName }}
{{- end }}
- name: tmp
  emptyDir: {}
{{- end }}

{{- define "kafka-jmx-sidecar.backfillMounts" -}}
{{- $b := .Values.backfill }}
- name: input
  mountPath: /data/input
  readOnly: true
- name: output
  mountPath: /data/output
{{- if $b.import.enabled }}
- name: prometheus-data
  mountPath: /data/prometheus
{{- end }}
- name: tmp
  mountPath: /tmp
{{- end }}
