// What the console's panels share: htm bound to preact, the clock, and how times and durations read.
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

export const html = htm.bind(h);

/** The time now, re-rendered every `ms` (countdowns and ages). */
export function useNow(ms = 1000) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}

/** Runs `load` now and every `ms` while mounted (and again whenever `deps` change). */
export function usePoll(load, ms, deps = []) {
  useEffect(() => {
    let stopped = false;
    const run = () => !stopped && load();
    run();
    const t = setInterval(run, ms);
    return () => {
      stopped = true;
      clearInterval(t);
    };
  }, deps);
}

/** 83 -> "1:23"; negative -> "0:00". */
export function clock(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

/** A duration in words a person reads at a glance: "45 s", "3 min", "2 h". */
export function ago(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 90) return `${s} s`;
  if (s < 5400) return `${Math.round(s / 60)} min`;
  return `${Math.round(s / 3600)} h`;
}

export const shortId = (id) => id.slice(0, 8);
export const time = (iso) => (iso ? new Date(iso).toLocaleTimeString() : '-');
