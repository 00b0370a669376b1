/**
 * Whether the process a pid file or a run record names still runs. A pid alone is not enough: a
 * killed process may be a zombie for a moment, and after a reboot (or long enough) its pid belongs to
 * another program, which made a stale data directory lock look held (commands waited, then failed).
 * So what a process writes carries a stamp beside its pid — on Linux the boot and the process's start
 * time — and a pid whose stamp differs is another process.
 */
import { readFileSync } from 'node:fs';

/** `<pid>` or `<pid> <stamp>`: how this process names itself in a lock file. */
export function ownHolderText(): string {
  return holderTextOf(process.pid);
}

/** How process `pid` would name itself in a lock file (`ownHolderText`). */
export function holderTextOf(pid: number): string {
  const stamp = processStamp(pid);
  return stamp === undefined ? String(pid) : `${pid} ${stamp}`;
}

/** This process's stamp, to record beside its pid; undefined where the system gives none. */
export function ownStamp(): string | undefined {
  return processStamp(process.pid);
}

/**
 * The pid a holder text (`ownHolderText`) names, when it is alive and the same process. Where the
 * system gives stamps, every holder writes one, so a text without it was not written by a holder (an
 * edited or foreign file naming some live process): stale, not a reason to wait for that process.
 */
export function liveHolderOf(text: string): number | undefined {
  const [pidText = '', stamp] = text.trim().split(/\s+/);
  const pid = Number.parseInt(pidText, 10);
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  if (stamp === undefined && ownStamp() !== undefined) return undefined;
  return isSameProcessAlive(pid, stamp) ? pid : undefined;
}

/**
 * Whether `pid` runs, is no zombie and, when `stamp` is given and the system can tell, is the process
 * that recorded it.
 */
export function isSameProcessAlive(pid: number, stamp?: string): boolean {
  if (!isAlive(pid)) return false;
  if (stamp === undefined) return true;
  const now = processStamp(pid);
  return now === undefined || now === stamp;
}

/** Whether process `pid` runs: exists, and is not a zombie (killed, not yet reaped by its parent). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  return procStat(pid)?.state !== 'Z';
}

/** Linux: `<boot id>:<start time in clock ticks since boot>`, unique to one process of one boot. */
function processStamp(pid: number): string | undefined {
  const stat = procStat(pid);
  const boot = bootId();
  return stat === undefined || boot === undefined ? undefined : `${boot}:${stat.startTime}`;
}

let boot: string | null | undefined;
function bootId(): string | undefined {
  if (boot === undefined) {
    try {
      boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || null;
    } catch {
      boot = null;
    }
  }
  return boot ?? undefined;
}

/**
 * `/proc/<pid>/stat`'s state and start time. Its second field (the command) may hold spaces and
 * parentheses, so fields are counted from the last ')': state is field 3, start time field 22.
 */
function procStat(pid: number): { state: string; startTime: string } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const [state, startTime] = [fields[0], fields[19]];
    return state && startTime ? { state, startTime } : undefined;
  } catch {
    // No /proc (not Linux), or gone meanwhile.
    return undefined;
  }
}
