{{/*
The brokers one release reads in the standalone mode, as a JSON list of
  {name, hostPort, url, podName, namespace, nodeIp, fullname, from}
one sidecar (a Deployment and its ConfigMap, named `fullname`) each. From `brokers`: a list, or the
pods behind `brokers.headlessService`, whose DNS names are written here since Helm resolves nothing
at render time. Empty when `brokers` is: then jmx.hostPort/jmx.url alone is the one broker, under the
release's own names as before. `from` names the value a broker came from, for messages.
*/}}
{{- define "kafka-jmx-sidecar.brokers" -}}
{{- $root := . }}
{{- $given := .Values.brokers }}
{{- $out := list }}
{{- if kindIs "slice" $given }}
{{- range $i, $b := $given }}
{{- $name := get $b "name" | default "" | toString }}
{{- $out = append $out (dict "name" $name "hostPort" (get $b "hostPort" | default "") "url" (get $b "url" | default "")
      "podName" (get $b "podName" | default $name) "namespace" (get $b "namespace" | default $root.Release.Namespace)
      "nodeIp" (get $b "nodeIp" | default "") "from" (printf "brokers[%d]" $i)) }}
{{- end }}
{{- else if kindIs "map" $given }}
{{- with get $given "headlessService" }}
{{- $svc := . }}
{{- $ns := get $svc "namespace" | default $root.Release.Namespace }}
{{- $pods := list }}
{{- range $i, $pod := get $svc "podNames" | default list }}
{{- $pods = append $pods (list $pod (printf "brokers.headlessService.podNames[%d]" $i)) }}
{{- end }}
{{- if not $pods }}
{{- $ids := get $svc "ids" | default list }}
{{- $from := "brokers.headlessService.ids[%d]" }}
{{- if not $ids }}
{{- $ids = until (get $svc "replicas" | default 0 | int) }}
{{- $from = "brokers.headlessService.replicas (id %d)" }}
{{- end }}
{{- range $i, $id := $ids }}
{{- $pods = append $pods (list (printf "%s-%d" (get $svc "podNamePrefix" | default "") (int $id)) (printf $from $i)) }}
{{- end }}
{{- end }}
{{- range $pod := $pods }}
{{- $host := printf "%s.%s.%s.svc" (index $pod 0) (get $svc "name" | default "") $ns }}
{{- with get $svc "clusterDomain" }}{{ $host = printf "%s.%s" $host . }}{{ end }}
{{- $out = append $out (dict "name" (index $pod 0) "hostPort" (printf "%s:%d" $host (get $svc "port" | default 0 | int))
      "url" "" "podName" (index $pod 0) "namespace" $ns "nodeIp" "" "from" (index $pod 1)) }}
{{- end }}
{{- end }}
{{- end }}
{{- $fullname := include "kafka-jmx-sidecar.fullname" $root }}
{{- range $b := $out }}
{{- $_ := set $b "fullname" (printf "%s-%s" $fullname $b.name | trunc 63 | trimSuffix "-") }}
{{- end }}
{{- toJson $out }}
{{- end }}

{{/* One entry per sidecar the release runs: the brokers, or one empty entry (jmx.hostPort alone). */}}
{{- define "kafka-jmx-sidecar.sidecars" -}}
{{- $brokers := include "kafka-jmx-sidecar.brokers" . | fromJsonArray }}
{{- toJson (default (list dict) $brokers) }}
{{- end }}

{{/*
Fills .into with the root context as one sidecar sees it: (dict "root" $ "broker" $b "into" $ctx).
With a broker: Values whose jmx.hostPort/jmx.url are the broker's (the config file and every
template read them there) and "broker"; without (jmx.hostPort alone): the root's own Values.
*/}}
{{- define "kafka-jmx-sidecar.brokerContext" -}}
{{- $into := .into }}
{{- range $key := list "Chart" "Release" "Files" "Capabilities" "Template" }}
{{- $_ := set $into $key (get $.root $key) }}
{{- end }}
{{- if .broker }}
{{- $values := deepCopy .root.Values }}
{{- $_ := set $values.jmx "hostPort" .broker.hostPort }}
{{- $_ := set $values.jmx "url" .broker.url }}
{{- $_ := set $into "Values" $values }}
{{- $_ := set $into "broker" .broker }}
{{- else }}
{{- $_ := set $into "Values" .root.Values }}
{{- end }}
{{- end }}

{{/* The name of a sidecar's Deployment and ConfigMap: <fullname>-<broker>, or <fullname> alone. */}}
{{- define "kafka-jmx-sidecar.sidecarName" -}}
{{- if hasKey . "broker" }}{{ .broker.fullname }}{{ else }}{{ include "kafka-jmx-sidecar.fullname" . }}{{ end }}
{{- end }}

{{/*
The chart's own labels naming the broker on its sidecar's pod (never strimzi.io/*: Strimzi's
selectors, network policies and PodMonitor would take the sidecar for a broker), and the Kafka
cluster's name. The monitors' strimziLabels relabel them into Strimzi's label names.
*/}}
{{- define "kafka-jmx-sidecar.brokerPodLabels" -}}
{{- $labels := dict }}
{{- with .Values.kafkaCluster.name }}
{{- $_ := set $labels "kafka-jmx-sidecar/cluster" . }}
{{- end }}
{{- if hasKey . "broker" }}
{{- $_ := set $labels "kafka-jmx-sidecar/broker" .broker.name }}
{{- $_ := set $labels "kafka-jmx-sidecar/broker-pod" .broker.podName }}
{{- $_ := set $labels "kafka-jmx-sidecar/broker-namespace" .broker.namespace }}
{{- end }}
{{- toYaml $labels }}
{{- end }}

{{/* A broker's node IP is an annotation, not a label: an IPv6 address is no label value. */}}
{{- define "kafka-jmx-sidecar.brokerPodAnnotations" -}}
{{- if and (hasKey . "broker") .broker.nodeIp }}
kafka-jmx-sidecar/broker-node-ip: {{ .broker.nodeIp | quote }}
{{- end }}
{{- end }}

{{/* The Deployment's selector: each broker's Deployment selects its own pods only. */}}
{{- define "kafka-jmx-sidecar.sidecarSelectorLabels" -}}
{{ include "kafka-jmx-sidecar.selectorLabels" . }}
{{- if hasKey . "broker" }}
kafka-jmx-sidecar/broker: {{ .broker.name }}
{{- end }}
{{- end }}

{{/*
The relabelings the chart puts before a monitor's own `relabelings` (the operator's come first):
`job`, and with `strimziLabels` the labels Strimzi's PodMonitor gives jmx_exporter's series, taken
from the sidecar pod's labels above. Each rule uses `(.+)` so that a label missing on a pod leaves
the target as the operator labelled it.
*/}}
{{- define "kafka-jmx-sidecar.monitorRelabelings" -}}
{{- $m := .monitor }}
{{- $rules := list }}
{{- with $m.job }}
{{- $rules = append $rules (dict "action" "replace" "targetLabel" "job" "replacement" .) }}
{{- end }}
{{- if $m.strimziLabels }}
{{- $label := "__meta_kubernetes_pod_label_kafka_jmx_sidecar_" }}
{{- range $rule := list
      (list "cluster" "strimzi_io_cluster" "${1}")
      (list "cluster" "strimzi_io_kind" "Kafka")
      (list "cluster" "strimzi_io_name" "${1}-kafka")
      (list "broker_pod" "kubernetes_pod_name" "${1}")
      (list "broker_namespace" "namespace" "${1}") }}
{{- $rules = append $rules (dict "action" "replace" "sourceLabels" (list (printf "%s%s" $label (index $rule 0)))
      "regex" "(.+)" "targetLabel" (index $rule 1) "replacement" (index $rule 2)) }}
{{- end }}
{{- $rules = append $rules (dict "action" "replace" "sourceLabels" (list "__meta_kubernetes_pod_annotation_kafka_jmx_sidecar_broker_node_ip")
      "regex" "(.+)" "targetLabel" "node_ip" "replacement" "${1}") }}
{{- end }}
{{- with concat $rules ($m.relabelings | default list) }}
{{- toYaml . }}
{{- end }}
{{- end }}

{{/* Refuse brokers that cannot work, naming the value to change. */}}
{{- define "kafka-jmx-sidecar.validateBrokers" -}}
{{- $v := .Values }}
{{- $brokers := include "kafka-jmx-sidecar.brokers" . | fromJsonArray }}
{{- if $v.brokers }}
{{- if ne $v.mode "standalone" }}
{{- fail (printf "values: brokers: only the standalone mode reads brokers over remote JMX (mode is %s); remove brokers" $v.mode) }}
{{- end }}
{{- if or $v.jmx.hostPort $v.jmx.url }}
{{- fail "values: brokers and jmx.hostPort/jmx.url: set one of them: brokers for several brokers (a list or a headless Service), jmx.hostPort or jmx.url for one" }}
{{- end }}
{{- if $v.rules.existingConfigMap }}
{{- fail "values: brokers and rules.existingConfigMap: a config file of yours names one broker; with brokers, give the rules as rules.inline and the chart writes each broker's file" }}
{{- end }}
{{- if and $v.archive.enabled $v.archive.existingClaim }}
{{- fail "values: brokers and archive.existingClaim: the brokers' sidecars would share one claim and one archive directory; leave archive.existingClaim empty (an emptyDir each)" }}
{{- end }}
{{- if kindIs "map" $v.brokers }}
{{- $svc := get $v.brokers "headlessService" | default dict }}
{{- if not (get $svc "name") }}
{{- fail "values: brokers.headlessService.name: set the brokers' headless Service (Strimzi: <cluster>-kafka-brokers)" }}
{{- end }}
{{- if not (get $svc "port") }}
{{- fail "values: brokers.headlessService.port: set the brokers' JMX port (Strimzi's jmxOptions: 9999)" }}
{{- end }}
{{- if and (get $svc "podNames") (or (get $svc "podNamePrefix") (get $svc "ids") (get $svc "replicas")) }}
{{- fail "values: brokers.headlessService.podNames: the pods are named either outright (podNames) or as podNamePrefix-<id> (ids or replicas), not both" }}
{{- end }}
{{- if and (not (get $svc "podNames")) (not (get $svc "podNamePrefix")) }}
{{- fail "values: brokers.headlessService.podNamePrefix: set it, the brokers' pods being <podNamePrefix>-<id> (Strimzi: <cluster>-kafka, with KafkaNodePools <cluster>-<pool>); or list them as podNames" }}
{{- end }}
{{- if and (get $svc "podNamePrefix") (get $svc "ids") (get $svc "replicas") }}
{{- fail "values: brokers.headlessService.ids and .replicas: set one of them (ids: the node ids, replicas: ids 0 to replicas-1)" }}
{{- end }}
{{- end }}
{{- if not $brokers }}
{{- fail "values: brokers: no broker in it; list the brokers, or give brokers.headlessService the pods (podNames, or podNamePrefix with ids or replicas)" }}
{{- end }}
{{- end }}
{{- $seen := dict }}
{{- range $b := $brokers }}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" $b.name) }}
{{- fail (printf "values: %s: the broker's name %q names its Deployment and ConfigMap: lower case letters, digits and '-', starting and ending with a letter or digit" $b.from $b.name) }}
{{- end }}
{{- if and (not $b.hostPort) (not $b.url) }}
{{- fail (printf "values: %s (%s): set its hostPort (host:port of the broker's JMX) or url" $b.from $b.name) }}
{{- end }}
{{- if and $b.hostPort $b.url }}
{{- fail (printf "values: %s (%s): set hostPort or url, not both" $b.from $b.name) }}
{{- end }}
{{- if or (gt (len $b.podName) 63) (not (regexMatch "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$" $b.podName)) }}
{{- fail (printf "values: %s.podName: %q is no label value (at most 63 letters, digits, '-', '_' or '.')" $b.from $b.podName) }}
{{- end }}
{{- range $key := list "name" "hostPort" "url" "podName" "fullname" }}
{{- $value := get $b $key }}
{{- if $value }}
{{- $id := printf "%s=%s" $key $value }}
{{- with get $seen $id }}
{{- if eq $key "fullname" }}
{{- fail (printf "values: %s: its objects' name %q (release and broker names, cut to 63 characters) is %s's too; shorten the names or set fullnameOverride" $b.from $value .) }}
{{- end }}
{{- fail (printf "values: %s: the %s %q is %s's too; each broker is listed once, under a name of its own" $b.from $key $value .) }}
{{- end }}
{{- $_ := set $seen $id $b.from }}
{{- end }}
{{- end }}
{{- end }}
{{- range $key := list "serviceMonitor" "podMonitor" }}
{{- $m := index $v $key }}
{{- if and $m.enabled $m.strimziLabels }}
{{- if not $brokers }}
{{- fail (printf "values: %s.strimziLabels: the labels name each broker's pod, which only brokers (a list or a headless Service) give; set brokers" $key) }}
{{- end }}
{{- if not $v.kafkaCluster.name }}
{{- fail (printf "values: %s.strimziLabels: set kafkaCluster.name (the Kafka resource's name), which strimzi_io_cluster and strimzi_io_name are made of" $key) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
