// Lesson progress, kept in the browser: per lesson, the steps whose tick
// the learner has seen (localStorage "statelab.lesson.<slug>" = {"done":[…]}).
// Nothing leaves the browser; a browser without storage simply forgets.

const key = (slug) => `statelab.lesson.${slug}`;

// loadProgress returns the steps done, from 1, sorted.
export function loadProgress(slug) {
  try {
    const v = JSON.parse(localStorage.getItem(key(slug)) || '{}');
    return Array.isArray(v.done) ? v.done.filter((n) => Number.isInteger(n) && n > 0).sort((a, b) => a - b) : [];
  } catch {
    return [];
  }
}

// markDone adds steps to the lesson's progress.
export function markDone(slug, steps, total) {
  const done = new Set(loadProgress(slug));
  let changed = false;
  for (const n of steps) {
    if (n >= 1 && n <= total && !done.has(n)) { done.add(n); changed = true; }
  }
  if (!changed) return;
  try {
    localStorage.setItem(key(slug), JSON.stringify({ done: [...done].sort((a, b) => a - b), total }));
  } catch { /* storage full or disabled: progress is a convenience */ }
}
