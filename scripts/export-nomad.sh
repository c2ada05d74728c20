#!/usr/bin/env bash
# Saves a Nomad cluster's HTTP API responses into DIR, in the layout
# `plansim import nomad DIR` reads, for a machine where only curl and jq
# are at hand (elsewhere, `plansim import nomad --address URL` reads the
# cluster directly). The same endpoints, paging and token as plansim's
# live import: NOMAD_ADDR (default http://127.0.0.1:4646), NOMAD_TOKEN
# (sent as X-Nomad-Token), NOMAD_NAMESPACE (default `default`; `*` for
# all), NOMAD_CACERT, NOMAD_SKIP_VERIFY.
#
#   scripts/export-nomad.sh DIR
#   plansim import nomad DIR -o cluster.yaml
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
dir=$1
addr=${NOMAD_ADDR:-http://127.0.0.1:4646}
addr=${addr%/}
namespace=${NOMAD_NAMESPACE:-default}
per_page=${PER_PAGE:-1000}
for tool in curl jq; do
  command -v "$tool" >/dev/null || { echo "$0: needs $tool" >&2; exit 2; }
done

curl_opts=(--silent --show-error --max-time 30)
[ -n "${NOMAD_TOKEN:-}" ] && curl_opts+=(--header "X-Nomad-Token: $NOMAD_TOKEN")
[ -n "${NOMAD_CACERT:-}" ] && curl_opts+=(--cacert "$NOMAD_CACERT")
case "${NOMAD_SKIP_VERIFY:-}" in 1|t|T|true|TRUE|True) curl_opts+=(--insecure) ;; esac

# A path segment or query value, percent-encoded.
enc() { jq -rn --arg v "$1" '$v|@uri'; }

# get PATH OUT: one response (a 404 is skipped: the import notes what is missing).
get() {
  local code
  code=$(curl "${curl_opts[@]}" --output "$2" --write-out '%{http_code}' "$addr$1")
  case $code in
    200) ;;
    404) rm -f "$2"; echo "$0: $addr$1: not found; skipped" >&2 ;;
    *) echo "$0: $addr$1: HTTP $code: $(head -c 200 "$2")" >&2; rm -f "$2"; exit 2 ;;
  esac
}

# list PATH QUERY OUT: every page (per_page, next_token, X-Nomad-NextToken) as one array.
list() {
  local path=$1 query=$2 out=$3 token="" pages headers page n=0
  pages=$(mktemp -d)
  while :; do
    n=$((n + 1))
    page="$pages/$(printf %06d "$n").json"
    headers="$pages/headers"
    local url="$path?${query:+$query&}per_page=$per_page"
    [ -n "$token" ] && url="$url&next_token=$(enc "$token")"
    curl "${curl_opts[@]}" --fail-with-body --dump-header "$headers" --output "$page" "$addr$url" \
      || { echo "$0: $addr$url: $(head -c 200 "$page")" >&2; exit 2; }
    token=$(tr -d '\r' < "$headers" | sed -n 's/^[Xx]-[Nn]omad-[Nn]ext[Tt]oken: *//p')
    [ -z "$token" ] && break
    [ "$n" -ge 100000 ] && { echo "$0: $path: more than 100000 pages" >&2; exit 2; }
  done
  jq -s 'add // []' "$pages"/*.json > "$out"
  rm -r "$pages"
}

ns="namespace=$(enc "$namespace")"
mkdir -p "$dir/node" "$dir/plugin" "$dir/volume" "$dir/job"
list /v1/nodes "resources=true" "$dir/nodes.json"
for id in $(jq -r '.[].ID' "$dir/nodes.json"); do
  get "/v1/node/$(enc "$id")" "$dir/node/$id.json"
done
list /v1/plugins "type=csi" "$dir/plugins.json"
for id in $(jq -r '.[].ID' "$dir/plugins.json"); do
  get "/v1/plugin/csi/$(enc "$id")" "$dir/plugin/$id.json"
done
list /v1/volumes "type=csi&$ns" "$dir/volumes.json"
# Ids with a `/` have no file name in the layout (plansim names them).
jq -r '.[] | select(.ID | contains("/") | not) | [.ID, .Namespace] | @tsv' "$dir/volumes.json" | while IFS=$'\t' read -r id vns; do
  get "/v1/volume/csi/$(enc "$id")?namespace=$(enc "$vns")" "$dir/volume/$id.json"
done
list /v1/jobs "$ns" "$dir/jobs.json"
# Periodic and dispatched children (a ParentID) are left out by the import.
jq -r '.[] | select((.ParentID // "") == "" and (.ID | contains("/") | not)) | [.ID, .Namespace] | @tsv' "$dir/jobs.json" | while IFS=$'\t' read -r id jns; do
  get "/v1/job/$(enc "$id")?namespace=$(enc "$jns")" "$dir/job/$id.json"
done
list /v1/allocations "$ns" "$dir/allocations.json"
echo "saved $addr into $dir: plansim import nomad $dir -o cluster.yaml" >&2
