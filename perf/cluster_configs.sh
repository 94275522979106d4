# Sourced by the scripts that run emulated clusters per configuration (perf/cluster_ab.sh,
# perf/cluster_algos.sh). A configuration is SHAPE.NUMBERING[.NODE:RATE]: SHAPE is KxP or
# uneven counts joined by '+', e.g. "4x2.block", "3+2+1.interleave", "3x2.block.2:100mbit"
# (node 2's link limited).

# Sets the array `cluster`: tests/cluster/cluster.sh with the configuration's options and "--",
# ready for the command to run.
cluster_for() {
  local shape numbering slow geometry
  IFS=. read -r shape numbering slow <<<"$1"
  if [[ "$shape" == *+* ]]; then geometry=(--layout "${shape//+/,}")
  else geometry=(--nodes "${shape%x*}" --ppn "${shape#*x}"); fi
  [[ -z "$slow" ]] || geometry+=(--node-rate "$slow")
  cluster=("$root/tests/cluster/cluster.sh" "${geometry[@]}" --numbering "$numbering" --timeout 300 --)
}
