{{/*
The configuration text: .Values.config or files/scheduler-config.yaml, with
the Lease in the chart's namespace.
*/}}
{{- define "pyscheduler.config" -}}
{{- $text := .Values.config | default (.Files.Get "files/scheduler-config.yaml") -}}
{{- regexReplaceAll "(?m)^([ \\t]*resourceNamespace:).*$" $text (printf "${1} %s" .Values.namespace) -}}
{{- end -}}

{{/*
The ConfigMap's name as kustomize's configMapGenerator makes it:
<name>-<hash>, the hash being the first 10 hex digits of the SHA-256 of the
JSON {"data":..., "kind":"ConfigMap", "name":""} with 0, 1, 3, a, e written
g, h, k, m, t (sigs.k8s.io/kustomize/api/hasher, v0.21). The name in that
JSON is empty there: its lookup of the path "metadata/name" finds no such
field. A config edit changes the name, and so rolls the Deployment, as
`kubectl apply -k` does.
*/}}
{{- define "pyscheduler.configMapName" -}}
{{- $data := dict "config.yaml" (include "pyscheduler.config" .) -}}
{{- $hash := dict "data" $data "kind" "ConfigMap" "name" "" | toJson | sha256sum | trunc 10 -}}
pyscheduler-config-{{ $hash | replace "0" "g" | replace "1" "h" | replace "3" "k" | replace "a" "m" | replace "e" "t" }}
{{- end -}}
