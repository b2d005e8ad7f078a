#!/usr/bin/env bash
# A real single-node Slurm on this machine, from Debian's packages (slurm-wlm, munge), for the
# fleet tests and for trying `cibench fleet slurm --submit` on one machine. No systemd: the daemons
# are started directly, their state, spool, logs and slurm.conf under one folder.
#
#   bash scripts/slurm-local.sh start DIR   # installs what is missing (as root), starts munged,
#                                           # slurmctld and slurmd, waits for the node to be idle,
#                                           # prints "export SLURM_CONF=DIR/slurm.conf"
#   bash scripts/slurm-local.sh stop DIR    # stops the three daemons started from DIR
#
# The node has this machine's CPUs and memory, one partition "cibench" (the default); job
# completions are kept in DIR/jobcomp.txt (jobcomp/filetxt), which `sacct --completion` reads
# where there is no slurmdbd. Needs root: munged and slurmd run as root or as munge.
set -euo pipefail

cmd="${1:-}"
dir="${2:-}"
if [[ -z "$cmd" || -z "$dir" ]]; then
  echo "usage: slurm-local.sh start|stop DIR" >&2
  exit 2
fi

stop_daemons() {
  for name in slurmd slurmctld munged; do
    local pidfile="$dir/$name.pid"
    if [[ -f "$pidfile" ]]; then
      local pid
      pid="$(cat "$pidfile")"
      if kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
      fi
      rm -f "$pidfile"
    fi
  done
}

if [[ "$cmd" == stop ]]; then
  stop_daemons
  exit 0
fi
if [[ "$cmd" != start ]]; then
  echo "slurm-local.sh: unknown command '$cmd' (start or stop)" >&2
  exit 2
fi
if [[ "$(id -u)" != 0 ]]; then
  echo "slurm-local.sh: needs root (munged, slurmctld and slurmd are started as root or munge)" >&2
  exit 1
fi

missing=()
for p in slurm-wlm munge; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  echo "slurm-local.sh: installing ${missing[*]}" >&2
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
stop_daemons  # a previous start from the same folder

# munge: its key and its socket at the default place (/run/munge/munge.socket.2, which Slurm's
# auth/munge uses), run as the munge user. A munged that answers already is used as it is (and
# left running by stop).
mkdir -p /run/munge /var/lib/munge /var/log/munge
if [[ ! -s /etc/munge/munge.key ]]; then
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
chown munge:munge /etc/munge /etc/munge/munge.key /run/munge /var/lib/munge /var/log/munge
chmod 0700 /etc/munge
chmod 0400 /etc/munge/munge.key
if ! munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
  runuser -u munge -- /usr/sbin/munged --force --pid-file=/run/munge/munged.pid
  for _ in $(seq 1 50); do [[ -s /run/munge/munged.pid ]] && break; sleep 0.1; done
  cp /run/munge/munged.pid "$dir/munged.pid"
fi

host="$(hostname -s)"
cpus="$(nproc)"
mem_mb=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 512 ))
mkdir -p "$dir/state" "$dir/spool" "$dir/log"
cat > "$dir/slurm.conf" <<EOF
ClusterName=cibench
SlurmctldHost=$host
AuthType=auth/munge
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldPort=6817
SlurmdPort=6818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/jobcomp.txt
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MinJobAge=3600
DefMemPerCPU=1024
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$host CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=cibench Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
export SLURM_CONF="$dir/slurm.conf"
# munged's socket is the default one (/run/munge/munge.socket.2), which slurm's auth/munge uses.
/usr/sbin/slurmctld -f "$SLURM_CONF"
/usr/sbin/slurmd -f "$SLURM_CONF"

for _ in $(seq 1 100); do
  state="$(sinfo -h -N -o '%T' 2>/dev/null | head -1 || true)"
  [[ "$state" == idle ]] && break
  sleep 0.2
done
if [[ "$state" != idle ]]; then
  echo "slurm-local.sh: the node is '${state:-not registered}' after 20 s; logs in $dir/log" >&2
  tail -5 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2 || true
  exit 1
fi
echo "export SLURM_CONF=$SLURM_CONF"
