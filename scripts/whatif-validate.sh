#!/usr/bin/env bash
# whatif-validate.sh checks wirepath whatif's predictions against the
# testbed with the changes really made (docs/whatif.md): the same requests
# run again with round trip added (the testbed's delaying forwarder,
# tbdelay, whose zero-delay cost the base runs pay too) and links slowed to
# 10 Mbit/s (the forwarder serialising frames), on chosen links, and with
# the request rate doubled; the predictions are made from the unchanged
# runs, and tbwhatif compares them per request kind with the latencies the
# client measured. Run as root (the testbed's requirement).
#
#   scripts/whatif-validate.sh OUT_DIR
#
# Settings (environment):
#   REPS=3              repetitions of every base and changed run (alternated)
#   REQUESTS=600        requests per run (one in flight, closed loop)
#   ENGINE=assembly     the engine whose requests whatif reads (analyze's
#                       default); its files are kept per engine (DIR/ENGINE/), so
#                       the same runs can be tabulated with another
#   EXPERIMENTS="store tier2 client app load"   which experiments to run
#   ONLY=REGEX          only the changes whose names match (e.g. 'toggle|sat')
#   WARMUP=2s           toggled runs: leave out the requests of a run's first WARMUP
#   DURATION=900s       the testbed's time limit per run
#   LOAD_RATE=100       the load experiment's base rate (requests per second,
#                       open loop); the changed runs double it (load-x4-toggle:
#                       four times it, in alternate seconds)
#   LOAD_REQUESTS=1500  requests per load run
#   SAT_INFLIGHT=32     the saturation run's closed-loop concurrency
#   SAT_REQUESTS=LOAD_REQUESTS  requests of the saturation run (at least 10 s of it)
#   ANALYZE_ONLY=1      only analyse and tabulate the runs already in OUT_DIR
#   BEFORE_WP=BIN       another wirepath (e.g. main's, before issue 16) whose
#                       one-link whatif (--link A->B --current-rtt 0 --rtt D,
#                       one call per link, the changes added by pattern) is
#                       tabulated beside this one's; it predicts no change
#                       for what it cannot express (load, bandwidth)
#   PLACEMENT=1         predict with the testbed's placement: every tier on this
#                       machine's cores (--placement, docs/whatif.md: one
#                       shared processor-sharing server), its CPU from the
#                       run's CPU profile (OUT_DIR/NAME.cpu, sampled every
#                       second: cpu=, fitted as a line in the request rate);
#                       a load base run's fit takes the windows of its
#                       toggled ×2 run too (its profile with its capture's
#                       requests counted in: whatif --annotate-cpu), so two
#                       rates; predictions-placed.json beside predictions.json
#   CPU_MODEL=wake      with PLACEMENT and the profiles: the saturation from
#                       the CPU's wake-up model (cpu-model=wake, docs/whatif.md)
#                       instead of the line
#   CPU_OTHER=1         the profiles' other processes on the machine (the load
#                       generator, the captures, the forwarder: sampled in
#                       columns of their own) count in the host's CPU; 0: the
#                       tiers' alone
#   BUSY=U±σ            busy= instead of the profile (e.g. 0.166±0.004, for
#                       runs made without the sampling); BUSY=mean: busy= the
#                       tiers' mean in the base run's window (the model
#                       before the CPU line)
#   QUIET_LOAD=2.5      before each run, wait (at most QUIET_WAIT=600 s) until
#                       the 1-minute load average is below this: the machine
#                       is shared, and other work's bursts are the runs' main noise
# A change named NAME-toggle is made in alternate 1 s windows of one run
# (SHIM_TOGGLE, or RATE_TOGGLE for the load): its requests with and without
# it are compared, under the same load of the machine (scenario NAME gives
# the prediction). A toggled forwarder change is predicted from the run
# itself (whatif on its capture, from its requests made without the
# change: γ is the minimum round trip, so the delayed windows do not move
# it); a toggled load from the group's base run (the run's utilisation
# mixes both rates). The machine's 1-minute load average is sampled every
# 5 s of each run into OUT_DIR/NAME.load, and the CPU time of the tiers'
# processes (a column per namespace: web1 ... db), the load generator's,
# the captures' and the forwarder's every second into OUT_DIR/NAME.cpu (a
# CPU profile, docs/formats.md; runs made before 2026-11-27 09:00 wrote
# the tiers' alone without a header, before 12:00 the tiers' sum in one
# column, both still read), with the machine's /proc/stat CPU line into
# OUT_DIR/NAME.stat; the validation lists each run's CPU per column and
# the machine's in its window.
# It writes OUT_DIR/validation.md (the tables) and keeps every run.
set -euo pipefail

out=${1:?usage: whatif-validate.sh OUT_DIR}
here=$(cd "$(dirname "$0")/.." && pwd)
reps=${REPS:-3}
requests=${REQUESTS:-600}
engine=${ENGINE:-assembly}
only=${ONLY:-.}
warmup=${WARMUP:-2s}
export DURATION=${DURATION:-900s}
groups=${EXPERIMENTS:-store tier2 client app load}
load_rate=${LOAD_RATE:-100}
load_requests=${LOAD_REQUESTS:-1500}
sat_inflight=${SAT_INFLIGHT:-32}
sat_requests=${SAT_REQUESTS:-$load_requests}
preds_json=predictions${PLACEMENT:+-placed}.json
# The testbed's nodes as whatif names them, all on this machine.
placed_nodes=web1,web2,198.51.100.100,app,store,dns,tier2,b1,b2,b3,db
mkdir -p "$out/bin"
out=$(cd "$out" && pwd)
bin=$out/bin
(cd "$here" && go build -o "$bin/" ./cmd/wirepath ./testbed/cmd/...)
wp=$bin/wirepath

# The experiments: per group the shim's settings of the base run, then
# per change NAME:ENV (a run with those settings) and its scenario line(s)
# in the scenario file below.
app=203.0.113.21 tier2=203.0.113.41
declare -A base_env=(
	[store]="SHIM=store"
	[tier2]="SHIM=tier2 SHIM_MATCH=$app,$tier2"
	[client]="SHIM=client"
	[app]="SHIM=app"
	[load]="RATE=$load_rate INFLIGHT=64 REQUESTS=$load_requests"
)
declare -A changes=(
	[store]="store-1ms:SHIM_DELAY=500us store-5ms:SHIM_DELAY=2500us store-20ms:SHIM_DELAY=10ms store-10mbit:SHIM_RATE=10mbit"
	[tier2]="tier2-5ms:SHIM_DELAY=2500us tier2-20ms:SHIM_DELAY=10ms tier2-1ms-toggle:SHIM_DELAY=500us,SHIM_TOGGLE=1s tier2-5ms-toggle:SHIM_DELAY=2500us,SHIM_TOGGLE=1s tier2-20ms-toggle:SHIM_DELAY=10ms,SHIM_TOGGLE=1s"
	[client]="client-5ms:SHIM_DELAY=2500us client-10mbit:SHIM_RATE=10mbit client-10mbit-toggle:SHIM_RATE=10mbit,SHIM_TOGGLE=1s"
	[app]="app-5ms:SHIM_DELAY=5ms,SHIM_DIR=in app-20ms:SHIM_DELAY=20ms,SHIM_DIR=in app-10mbit:SHIM_RATE=10mbit app-1ms-toggle:SHIM_DELAY=1ms,SHIM_DIR=in,SHIM_TOGGLE=1s app-5ms-toggle:SHIM_DELAY=5ms,SHIM_DIR=in,SHIM_TOGGLE=1s app-20ms-toggle:SHIM_DELAY=20ms,SHIM_DIR=in,SHIM_TOGGLE=1s app-10mbit-toggle:SHIM_RATE=10mbit,SHIM_TOGGLE=1s"
	[load]="load-x2:RATE=$((2 * load_rate)) load-x2-toggle:RATE_HIGH=$((2 * load_rate)),RATE_TOGGLE=1s load-x4-toggle:RATE_HIGH=$((4 * load_rate)),RATE_TOGGLE=1s sat:RATE=0,INFLIGHT=$sat_inflight,REQUESTS=$sat_requests"
)
cat >"$out/scenarios.txt" <<'EOF'
# The changes the validation makes, as whatif reads them (docs/whatif.md).
[store-1ms]
link app->store rtt=+1ms
[store-5ms]
link app->store rtt=+5ms
[store-20ms]
link app->store rtt=+20ms
[store-10mbit]
link app->store bandwidth=10Mbit/s
[tier2-1ms]
link app->tier2 rtt=+1ms
[tier2-5ms]
link app->tier2 rtt=+5ms
[tier2-20ms]
link app->tier2 rtt=+20ms
[client-5ms]
host CLIENT rtt=+5ms
[client-10mbit]
host CLIENT bandwidth=10Mbit/s
# The forwarder sits on the app's bridge port and delays the frames toward
# the app (SHIM_DIR=in): its links to the web tier, DNS and tier2 gain the
# delay as round trip (not its private link to the store).
[app-1ms]
link web1->app rtt=+1ms
link web2->app rtt=+1ms
link app->dns rtt=+1ms
link app->tier2 rtt=+1ms
[app-5ms]
link web1->app rtt=+5ms
link web2->app rtt=+5ms
link app->dns rtt=+5ms
link app->tier2 rtt=+5ms
[app-20ms]
link web1->app rtt=+20ms
link web2->app rtt=+20ms
link app->dns rtt=+20ms
link app->tier2 rtt=+20ms
[app-10mbit]
link web1->app bandwidth=10Mbit/s
link web2->app bandwidth=10Mbit/s
link app->dns bandwidth=10Mbit/s
link app->tier2 bandwidth=10Mbit/s
[load-x2]
load 2
[load-x4]
load 4
[sat]
load 1
EOF

# quiet waits until the machine's 1-minute load average is below
# QUIET_LOAD, at most QUIET_WAIT seconds.
quiet() {
	local limit=${QUIET_LOAD:-2.5} waited=0
	while awk -v l="$limit" '{exit !($1 >= l)}' /proc/loadavg && [ "$waited" -lt "${QUIET_WAIT:-600}" ]; do
		sleep 10
		waited=$((waited + 10))
	done
	echo "load $(cut -d' ' -f1 /proc/loadavg) after waiting ${waited}s" >&2
}

# selected NAME reports whether change NAME is selected (ONLY).
selected() { [[ $1 =~ $only ]]; }

# self_toggled NAME reports whether NAME is a toggled forwarder change,
# predicted from its own run.
self_toggled() { [[ $1 == *-toggle && $1 != load-* ]]; }

# needs_base GROUP reports whether a selected change of GROUP is predicted
# from the group's base runs.
needs_base() {
	local c name
	for c in ${changes[$1]}; do
		name=${c%%:*}
		selected "$name" && ! self_toggled "$name" && return 0
	done
	return 1
}

# cpu_nodes are the testbed's namespaces (placement nodes) whose servers'
# CPU the profiles record, a column each; cpu_header is the header of the
# CPU profiles tier_ticks writes (other processes: the load generator, the
# captures, the forwarder).
cpu_nodes=(web1 web2 app store dns tier2 b1 b2 b3 db)
cpu_header="wirepath-cpu v1 hz=$(getconf CLK_TCK) columns=time,$(
	IFS=,
	echo "${cpu_nodes[*]}"
),client,capture,shim other=client,capture,shim"

# tier_ticks PREFIX prints the time and the CPU time (clock ticks, user
# and system) the processes of the testbed whose namespaces are PREFIX-*
# (testbed.sh's P) have used so far: its tiers' servers, each in the
# column of its namespace (the app is the python3 running app.py), then
# the load generator, the captures and the delaying forwarder, by name
# (a capture in the app's namespace is a capture); each with its children
# that have exited (cutime, cstime: a postgres backend or an nginx worker
# gone keeps its time in its parent's, where the sum of the living alone
# would drop). Processes of no PREFIX namespace (another testbed's) are
# not counted. It appends the machine's /proc/stat CPU line to fd 3.
tier_ticks() {
	local prefix=$1 p line comm f n k node
	local -A sum=() nsof=() kind=() ticks=()
	local paths=()
	for k in "${cpu_nodes[@]}" client capture shim; do sum[$k]=0; done
	while read -r f n; do
		nsof[$n]=${f#/run/netns/"$prefix"-}
	done < <(stat -L -c '%n %i' /run/netns/"$prefix"-* 2>/dev/null)
	for p in /proc/[0-9]*; do
		read -r line 2>/dev/null <"$p/stat" || continue
		comm=${line#*(} comm=${comm%%)*}
		case $comm in
		nginx | tbtier | redis-server | memcached | dnsmasq | postgres) k=node ;;
		python3) grep -qs app.py "$p/cmdline" && k=node || continue ;;
		tbload) k=client ;;
		dumpcap | tcpdump | tbpcap) k=capture ;;
		tbdelay) k=shim ;;
		*) continue ;;
		esac
		read -ra f <<<"${line##*) }"
		kind[$p]=$k ticks[$p]=$((f[11] + f[12] + f[13] + f[14]))
		paths+=("$p/ns/net")
	done
	if [ ${#paths[@]} -gt 0 ]; then
		while read -r f n; do
			p=${f%/ns/net} node=${nsof[$n]:-}
			[ -n "$node" ] || continue
			k=${kind[$p]}
			[ "$k" != node ] || k=$node
			[ -n "${sum[$k]+set}" ] || continue
			sum[$k]=$((sum[$k] + ticks[$p]))
		done < <(stat -L -c '%n %i' "${paths[@]}" 2>/dev/null)
	fi
	local t
	t=$(date +%s.%N) line=$t
	for k in "${cpu_nodes[@]}" client capture shim; do line+=" ${sum[$k]}"; done
	echo "$line"
	read -r line </proc/stat
	echo "$t ${line#cpu  }" >&3
}

# testbed_pid prints the pid of this script's testbed.sh (its namespaces
# are wptb<pid>-*), nothing before it has started. The script runs under
# /usr/bin/env bash, so its process is named bash: it is found by its
# parent (this script) and its command line.
testbed_pid() {
	local p line f
	for p in /proc/[0-9]*; do
		read -r line 2>/dev/null <"$p/stat" || continue
		read -ra f <<<"${line##*) }"
		[ "${f[1]}" = $$ ] || continue
		tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -q 'testbed/testbed.sh' && echo "${p#/proc/}" && return 0
	done
	return 0
}

# cpu_columns is awk that reads a CPU profile's header (docs/formats.md)
# on its first line: name[j] and own[j] (1 for a CPU column that is not
# other=) for each column j of ncol; a file from before the profiles had a
# header (lines TIME TICKS: the tiers' alone) gets columns time,tiers
# (old = 1). Its own variables start cc_.
cpu_columns='
	NR == 1 {
		if ($0 !~ /^wirepath-cpu/) { ncol = 2; name[1] = "time"; name[2] = "tiers"; own[2] = 1; old = 1 }
		else {
			ncol = 2; name[1] = "time"; name[2] = "cpu"
			for (cc_i = 3; cc_i <= NF; cc_i++) {
				if ($cc_i ~ /^columns=/) ncol = split(substr($cc_i, 9), name, ",")
				if ($cc_i ~ /^other=/) { cc_n = split(substr($cc_i, 7), cc_o, ","); for (cc_k = 1; cc_k <= cc_n; cc_k++) oth[cc_o[cc_k]] = 1 }
			}
			for (cc_j = 1; cc_j <= ncol; cc_j++) own[cc_j] = name[cc_j] != "time" && name[cc_j] != "requests" && !(name[cc_j] in oth)
		}
	}'

# cpu_profile NAME prints run NAME's CPU profile within its window (its
# testbed.json), less its first WARMUP (the load starting), with the
# tiers' columns alone (not the other= ones) when CPU_OTHER=0; a file from
# before the profiles had a header (the tiers' alone) gets one.
cpu_profile() {
	local f=$out/$1.cpu j=$out/$1/testbed.json w=2
	[[ ! $warmup =~ ^([0-9.]+)s$ ]] || w=${BASH_REMATCH[1]}
	awk -v a="$(jq --arg w "$w" '.window_start_ns / 1e9 + ($w | tonumber)' "$j")" -v b="$(jq '.window_end_ns / 1e9' "$j")" \
		-v hz="$(getconf CLK_TCK)" -v other="${CPU_OTHER:-1}" "$cpu_columns"'
		NR == 1 {
			all = other != 0 && !old
			if (all) print
			else {
				h = "wirepath-cpu v1 hz=" hz " columns=time"
				for (j = 2; j <= ncol; j++) if (own[j]) h = h "," name[j]
				print h
			}
			if (!old) next
		}
		/^#/ { next }
		$1 >= a && $1 <= b {
			if (all) { print; next }
			l = $1
			for (j = 2; j <= ncol; j++) if (own[j]) l = l " " $j
			print l
		}' "$f"
}

# cpu_files BASE prints the cpu= value for base run BASE's placement: its
# profile, and for a load base run its toggled runs' (×2, ×4; same
# repetition, those made) with their requests counted in; nothing
# without a profile.
cpu_files() {
	local name=$1 a=$out/$1/$engine t k
	[ -s "$out/$name.cpu" ] && [ -s "$out/$name/testbed.json" ] || return 0
	cpu_profile "$name" >"$a/cpu.txt"
	local files=$a/cpu.txt
	for k in x2 x4; do
		t=${name/-base-/-$k-toggle-}
		[[ $name == load-base-* ]] && [ -s "$out/$t.cpu" ] && [ -s "$out/$t/truth.jsonl" ] || continue
		analyze "$out/$t"
		cpu_profile "$t" >"$out/$t/$engine/cpu.txt"
		"$wp" -q whatif "$out/$t/$engine/result.json" --trace "$out/$t/$engine/trace.tsv" \
			--annotate-cpu "$out/$t/$engine/cpu.txt" -o "$out/$t/$engine/cpu-requests.txt"
		files+=,$out/$t/$engine/cpu-requests.txt
	done
	echo "$files"
}

# busy_of NAME prints the share of the machine's cores the tiers (the
# profile's columns but the other= ones) kept busy in run NAME's window
# (its testbed.json), the mean and standard error over 5 s blocks, as
# whatif's busy= takes it; nothing without samples.
busy_of() {
	local f=$out/$1.cpu j=$out/$1/testbed.json
	[ -s "$f" ] && [ -s "$j" ] || return 0
	awk -v a="$(jq '.window_start_ns / 1e9' "$j")" -v b="$(jq '.window_end_ns / 1e9' "$j")" \
		-v c="$(nproc)" -v hz="$(getconf CLK_TCK)" "$cpu_columns"'
		BEGIN { n = 0 }
		NR == 1 && !old { next }
		/^#/ { next }
		$1 >= a && $1 <= b { t[n] = $1; v[n] = 0; for (j = 2; j <= ncol; j++) if (own[j]) v[n] += $j; n++ }
		END {
			for (i = 0; i + 5 < n; i += 5) { x = (v[i + 5] - v[i]) / hz / (t[i + 5] - t[i]) / c; s += x; s2 += x * x; k++ }
			if (k < 2) exit
			m = s / k
			printf "%.4f±%.4f\n", m, sqrt(max0(s2 / k - m * m) / (k - 1))
		}
		function max0(x) { return x > 0 ? x : 0 }' "$f"
}

# cpu_cores NAME prints, for run NAME's window less its first WARMUP, the
# cores each column of its CPU profile used (the counters' change over the
# window; a column whose counter went back, a process gone with its time,
# over the samples before that) and, from its NAME.stat, the machine's
# (every process and the kernel: /proc/stat's busy and steal); nothing
# without a profile.
cpu_cores() {
	local f=$out/$1.cpu st=$out/$1.stat j=$out/$1/testbed.json w=2
	[ -s "$f" ] && [ -s "$j" ] || return 0
	[[ ! $warmup =~ ^([0-9.]+)s$ ]] || w=${BASH_REMATCH[1]}
	local a b
	a=$(jq --arg w "$w" '.window_start_ns / 1e9 + ($w | tonumber)' "$j") b=$(jq '.window_end_ns / 1e9' "$j")
	awk -v a="$a" -v b="$b" -v hz="$(getconf CLK_TCK)" "$cpu_columns"'
		NR == 1 && !old { next }
		/^#/ { next }
		$1 >= a && $1 <= b {
			for (j = 2; j <= ncol; j++) {
				if (stop[j]) continue
				if (!(j in t0)) { t0[j] = t1[j] = $1; v0[j] = v1[j] = $j; continue }
				if ($j < v1[j]) { stop[j] = 1; continue }
				t1[j] = $1; v1[j] = $j
			}
		}
		END {
			l = "CPU (cores) in the window:"
			for (j = 2; j <= ncol; j++) if (t1[j] > t0[j]) l = l sprintf(" %s %.3f", name[j], (v1[j] - v0[j]) / hz / (t1[j] - t0[j]))
			print l
		}' "$f"
	[ -s "$st" ] || return 0
	awk -v a="$a" -v b="$b" -v hz="$(getconf CLK_TCK)" '
		/^#/ { next }
		$1 >= a && $1 <= b {
			busy = $2 + $3 + $4 + $7 + $8; all = busy + $5 + $6 + $9
			if (!n++) { t0 = $1; b0 = busy; s0 = $9 }
			t1 = $1; b1 = busy; s1 = $9
		}
		END { if (n > 1) printf "the machine (/proc/stat): busy %.3f cores, steal %.3f\n", (b1 - b0) / hz / (t1 - t0), (s1 - s0) / hz / (t1 - t0) }' "$st"
}

# run NAME ENV... runs the testbed once into OUT/NAME (kept when it exists),
# sampling the machine's load average into OUT/NAME.load meanwhile.
run() {
	local name=$1 sampler cpu tb= rc=0
	shift
	if [ ! -c /dev/null ]; then
		echo "whatif-validate: /dev/null is not a device (something replaced it): restore it (mknod -m 666 /dev/null c 1 3)" >&2
		return 1
	fi
	[ -s "$out/$name/truth.jsonl" ] && return 0
	[ -z "${ANALYZE_ONLY:-}" ] || return 0
	echo "== $name: $*" >&2
	quiet
	cut -d' ' -f1 /proc/loadavg >"$out/$name.load"
	(while sleep 5; do cut -d' ' -f1 /proc/loadavg; done) >>"$out/$name.load" &
	sampler=$!
	(
		echo "$cpu_header"
		echo "# /proc/stat cpu: time user nice system idle iowait irq softirq steal guest guest_nice (ticks)" >&3
		while sleep 1; do
			[ -n "$tb" ] || tb=$(testbed_pid)
			tier_ticks "wptb${tb:-0}"
		done
	) >"$out/$name.cpu" 3>"$out/$name.stat" &
	cpu=$!
	env REQUESTS="$requests" INFLIGHT=1 TBBIN="$bin" "$@" "$here/testbed/testbed.sh" "$out/$name" >"$out/$name.log" 2>&1 || rc=$?
	kill "$sampler" "$cpu" 2>/dev/null || true
	wait "$sampler" "$cpu" 2>/dev/null || true
	if [ "$rc" -ne 0 ]; then
		echo "whatif-validate: run $name failed (see $out/$name.log)" >&2
		tail -5 "$out/$name.log" >&2
		return 1
	fi
}

for r in $(seq "$reps"); do
	for g in $groups; do
		# shellcheck disable=SC2086
		! needs_base "$g" || run "$g-base-$r" ${base_env[$g]}
		for c in ${changes[$g]}; do
			name=${c%%:*} envs=${c#*:}
			selected "$name" || continue
			# shellcheck disable=SC2086
			run "$name-$r" ${base_env[$g]} ${envs//,/ }
		done
	done
done

# analyze DIR makes DIR's trace and the engine's result (once), in DIR/ENGINE.
analyze() {
	local d=$1 a=$1/$engine
	[ -s "$a/result.json" ] && return 0
	mkdir -p "$a"
	local keylog=()
	[ ! -s "$d/keylog.txt" ] || keylog=(--tls-keylog "$d/keylog.txt")
	"$wp" -q analyze "$d"/*.pcap "$d"/*.pcapng --reference "$d/outside.pcapng" --roles "$d/roles.txt" "${keylog[@]}" \
		--engine "$engine" --instances -1 --format json --save-trace "$a/trace.tsv" -o "$a/result.json" 2>>"$d.log"
}

# shim_rtt DIR prints the round trip, in µs, DIR's forwarder added to the
# frames it held: per direction that held any, its delay plus how late its
# timers released them on average (shim.json), added up.
shim_rtt() {
	jq '[(if .["sa>sb"].held > 0 then .delay_ab_ns + .["sa>sb"].mean_late_ns else 0 end),
	     (if .["sb>sa"].held > 0 then .delay_ba_ns + .["sb>sa"].mean_late_ns else 0 end)] | add / 1000 | round' "$1/shim.json"
}

# predict DIR [SCEN] analyses DIR and runs whatif on it with every
# scenario, into DIR/ENGINE/predictions.json (predictions-placed.json with
# PLACEMENT; once). With SCEN (a toggled
# forwarder run) it adds scenario SCEN-shim: SCEN with the round trip the
# forwarder really added (shim_rtt: at 1 ms its timers added 8 % more) on
# each of its links instead of the nominal one.
predict() {
	local a=$1/$engine scen=${2:-} sc=$out/scenarios.txt place=() busy cpu=
	analyze "$1"
	[ ! -s "$a/$preds_json" ] || return 0
	if [ -n "${PLACEMENT:-}" ]; then
		busy=${BUSY:-}
		[ "$busy" != mean ] || busy=$(busy_of "$(basename "$1")")
		[ -n "${BUSY:-}" ] || cpu=$(cpu_files "$(basename "$1")")
		echo "$placed_nodes=$(nproc)${busy:+ busy=$busy}${cpu:+ cpu=$cpu${CPU_MODEL:+ cpu-model=$CPU_MODEL}} name=testbed" >"$a/placement.txt"
		place=(--placement "$a/placement.txt")
	fi
	if [ -n "$scen" ] && [ -s "$1/shim.json" ]; then
		sc=$a/scenarios.txt
		{
			cat "$out/scenarios.txt"
			echo "[$scen-shim]"
			awk -v s="[$scen]" -v rtt="$(shim_rtt "$1")" '$0 == s {on = 1; next} /^\[/ {on = 0}
				on && /^(link|host) / {line = ""; for (i = 1; i <= NF; i++) if ($i !~ /^rtt=/) line = line (line == "" ? "" : " ") $i; print line " rtt=+" rtt "us"}' "$out/scenarios.txt"
		} >"$sc"
	fi
	"$wp" -q whatif "$a/result.json" --trace "$a/trace.tsv" --scenario "$sc" "${place[@]}" --format json --requests -o "$a/$preds_json"
}

# before_deltas BASE NAME [SCENARIOS] writes BASE/ENGINE/before-NAME.json: per pattern rank,
# the latency change BEFORE_WP's whatif predicts for scenario NAME's link
# round-trip changes (one call per link, added up), 0 for the rest.
before_deltas() {
	local d=$1/$engine name=$2 parts=() line link delta i=0
	local f=$d/before-$name.json
	while read -r line; do
		[[ $line =~ ^link\ ([^ ]+)\ rtt=\+([0-9.]+[mu]?s)$ ]] || continue
		link=${BASH_REMATCH[1]} delta=${BASH_REMATCH[2]}
		i=$((i + 1))
		if "$BEFORE_WP" -q whatif "$d/result.json" --link "$link" --current-rtt 0 --rtt "$delta" --format json \
			-o "$d/before-$name-$i.json" 2>>"$d/before.log"; then
			parts+=("$d/before-$name-$i.json")
		fi
	done < <(awk -v s="[$name]" '$0 == s {on = 1; next} /^\[/ {on = 0} on' "${3:-$out/scenarios.txt}")
	if [ ${#parts[@]} -eq 0 ]; then
		echo '{}' >"$f"
		return
	fi
	jq -s 'map(.[]) | group_by(.rank) | map({key: (.[0].rank | tostring), value: (map(.predicted_latency_us - .latency_us) | add)}) | from_entries' \
		"${parts[@]}" >"$f"
}

md=$out/validation-$engine${PLACEMENT:+-placed}.md
{
	echo "# whatif validation ($(date -u +%Y-%m-%d), engine $engine, $reps repetitions, $requests requests per run)"
	echo
} >"$md"
for g in $groups; do
	bases=() preds=() bf=()
	for r in $(seq "$reps"); do
		d=$out/$g-base-$r
		[ -s "$d/truth.jsonl" ] || continue
		predict "$d"
		bases+=("$d") preds+=("$d/$engine/$preds_json")
	done
	for c in ${changes[$g]}; do
		name=${c%%:*}
		selected "$name" || continue
		runs=()
		for r in $(seq "$reps"); do
			[ -s "$out/$name-$r/truth.jsonl" ] && runs+=("$out/$name-$r")
		done
		[ ${#runs[@]} -gt 0 ] || continue
		# A NAME-toggle run made scenario NAME's change in alternate 1 s
		# windows (SHIM_TOGGLE, RATE_TOGGLE): tbwhatif compares its own
		# requests, predicted from the run itself (a forwarder change) or
		# from the base runs (the load).
		scen=${name%-toggle} tput=() before=() toggle=() b=("${bases[@]}") p=("${preds[@]}")
		[ "$name" != sat ] || tput=(-throughput)
		[ "$scen" = "$name" ] || toggle=(-toggle 1s -warmup "$warmup")
		if self_toggled "$name"; then
			b=() p=()
			for d in "${runs[@]}"; do
				predict "$d" "$scen"
				b+=("$d") p+=("$d/$engine/$preds_json")
			done
			toggle+=(-self)
			[ ! -s "${runs[0]}/shim.json" ] || scen=$scen-shim
		fi
		[ ${#b[@]} -gt 0 ] || continue
		if [ -n "${BEFORE_WP:-}" ] && [ "$name" != sat ]; then
			bf=()
			for d in "${b[@]}"; do
				sc=$out/scenarios.txt
				[ ! -s "$d/$engine/scenarios.txt" ] || sc=$d/$engine/scenarios.txt
				before_deltas "$d" "$scen" "$sc"
				bf+=("$d/$engine/before-$scen.json")
			done
			before=(-before "$(IFS=,; echo "${bf[*]}")")
		fi
		"$bin/tbwhatif" -base "$(IFS=,; echo "${b[*]}")" -pred "$(IFS=,; echo "${p[*]}")" -runs "$(IFS=,; echo "${runs[*]}")" \
			-trace "$engine/trace.tsv" -scenario "$scen" -name "$name" "${tput[@]}" "${before[@]}" "${toggle[@]}" >>"$md"
		echo >>"$md"
		# Each run's CPU per process group and the machine's: at saturation,
		# which of them is at its ceiling.
		for d in "${runs[@]}"; do
			cpu_cores "$(basename "$d")" | sed "s|^|- $(basename "$d"): |" >>"$md"
		done
		echo >>"$md"
		# Where the saturated runs' requests wait (tbresid: in progress per tier).
		if [ "$name" = sat ]; then
			"$bin/tbresid" -warmup "$warmup" "${runs[@]}" >>"$md"
			echo >>"$md"
		fi
	done
done
echo "whatif-validate: $md" >&2
