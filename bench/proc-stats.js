'use strict';

const fs = require('node:fs');
const os = require('node:os');
const { execFileSync } = require('node:child_process');

const TICKS_PER_SECOND = clockTicks();

/**
 * A process and all its descendants (nginx's workers, lila's --workers), read
 * from /proc once: callers take it before a measurement, while the tree is
 * stable.
 *
 * @param {number} pid
 * @returns {number[]} `pid` first
 */
function processTree(pid) {
  const children = new Map();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(entry)) continue;
    const fields = statFields(Number(entry));
    if (fields === null) continue;
    const parent = Number(fields[1]);
    if (!children.has(parent)) children.set(parent, []);
    children.get(parent).push(Number(entry));
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i]) || []));
  return tree;
}

/**
 * User plus system CPU time the processes have used so far, all their threads
 * included (V8's GC threads, libuv's pool); a process gone counts 0.
 *
 * @param {number[]} pids
 * @param {{reaped?: boolean}} [options] add what their children that have
 *   exited and been waited for used (cutime and cstime)
 * @returns {number} seconds, in steps of one clock tick (usually 10 ms)
 */
function cpuSeconds(pids, { reaped = false } = {}) {
  let ticks = 0;
  for (const pid of pids) {
    const fields = statFields(pid);
    if (fields === null) continue;
    // After the `(comm)`, field 0 is the state: utime, stime, cutime and cstime are fields 14 to 17 of stat(5).
    ticks += Number(fields[11]) + Number(fields[12]);
    if (reaped) ticks += Number(fields[13]) + Number(fields[14]);
  }
  return ticks / TICKS_PER_SECOND;
}

/**
 * Runs `work` and reads the CPU time `pids` used meanwhile, right before it
 * starts and right after it ends: a proxy's CPU time over a measured run.
 *
 * @param {number[] | null} pids the proxy's process tree; empty or null for none
 * @param {() => Promise<any>} work
 * @returns {Promise<{value: any, cpu: number | null}>} what `work` resolved to; `cpu` in seconds, null without pids
 */
async function cpuDuring(pids, work) {
  const none = pids === null || pids.length === 0;
  const before = none ? 0 : cpuSeconds(pids);
  const value = await work();
  return { value, cpu: none ? null : cpuSeconds(pids) - before };
}

/**
 * CPU time every process on the machine has used since boot, all cores
 * added up: user, nice, system, irq and softirq of /proc/stat; not idle,
 * iowait or steal.
 *
 * @returns {number} seconds
 */
function machineCpuSeconds() {
  const fields = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, , , irq, softirq] = fields;
  return (user + nice + system + irq + softirq) / TICKS_PER_SECOND;
}

/**
 * Starts counting the CPU time that processes other than this bench (its
 * process tree, the children that have exited included) use: the machine's
 * CPU time less the bench's own.
 *
 * @returns {{machine: number, own: number, at: bigint}} for `othersSince`
 */
function othersStart() {
  return { machine: machineCpuSeconds(), own: ownCpuSeconds(), at: process.hrtime.bigint() };
}

/**
 * How much CPU time something else took since `othersStart`.
 *
 * @param {{machine: number, own: number, at: bigint}} start
 * @returns {{cpu: number, wall: number, share: number}} seconds, seconds, and a
 *   percentage of what all the cores could have done
 */
function othersSince(start) {
  const cpu = Math.max(0, machineCpuSeconds() - start.machine - (ownCpuSeconds() - start.own));
  const wall = Number(process.hrtime.bigint() - start.at) / 1e9;
  return { cpu, wall, share: (100 * cpu) / (wall * os.cpus().length) };
}

/**
 * The sum of VmRSS (resident now) and of VmHWM (the peak) over the processes.
 *
 * @param {number[]} pids
 * @returns {{rss: number, peak: number}} bytes
 */
function memory(pids) {
  let rss = 0;
  let peak = 0;
  for (const pid of pids) {
    let status;
    try {
      status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    } catch {
      continue;
    }
    rss += statusKilobytes(status, 'VmRSS') * 1024;
    peak += statusKilobytes(status, 'VmHWM') * 1024;
  }
  return { rss, peak };
}

/**
 * The descriptors a process has open (the entries of `/proc/<pid>/fd`).
 *
 * @param {number} pid
 * @returns {number}
 */
function descriptors(pid) {
  return fs.readdirSync(`/proc/${pid}/fd`).length;
}

/**
 * Waits until the process holds at most `target` descriptors (its
 * connections ended, idle upstream sockets closed), polling: nothing tells a
 * bench when. At the deadline, the count it has then.
 *
 * @param {number} pid
 * @param {number} target
 * @param {number} [deadlineMs]
 * @returns {Promise<number>}
 */
async function descriptorsAtRest(pid, target, deadlineMs = 10000) {
  const deadline = Date.now() + deadlineMs;
  let count = descriptors(pid);
  while (count > target && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    count = descriptors(pid);
  }
  return count;
}

/**
 * Least squares: the slope of y over x.
 *
 * @param {number[]} xs
 * @param {number[]} ys
 * @returns {number}
 */
function slopeOf(xs, ys) {
  const mean = (values) => values.reduce((sum, v) => sum + v, 0) / values.length;
  const mx = mean(xs);
  const my = mean(ys);
  let num = 0;
  let den = 0;
  for (let i = 0; i < xs.length; i++) {
    num += (xs[i] - mx) * (ys[i] - my);
    den += (xs[i] - mx) ** 2;
  }
  return num / den;
}

module.exports = {
  processTree, cpuSeconds, cpuDuring, machineCpuSeconds, othersStart, othersSince, memory, descriptors, descriptorsAtRest, slopeOf
};

function ownCpuSeconds() {
  return cpuSeconds(processTree(process.pid), { reaped: true });
}

// The fields of /proc/<pid>/stat after `(comm)`, which may itself hold spaces and parentheses.
function statFields(pid) {
  let stat;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

function statusKilobytes(status, key) {
  const found = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status);
  return found === null ? 0 : Number(found[1]);
}

function clockTicks() {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' })) || 100;
  } catch {
    return 100;
  }
}
