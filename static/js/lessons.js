// The lesson list (and the list a missing lesson's page offers): each
// lesson's progress, which the browser keeps (progress.js).

import { loadCatalog, t } from './i18n.js';
import { loadProgress } from './progress.js';

async function main() {
  await loadCatalog(document.body.dataset.lang || 'en');
  const links = [...document.querySelectorAll('.lesson-list a[data-lesson]')];
  let finished = 0;
  for (const a of links) {
    const steps = Number(a.dataset.steps);
    const done = loadProgress(a.dataset.lesson).filter((n) => n <= steps).length;
    const bar = a.querySelector('progress');
    const label = a.querySelector('.lesson-progress-text');
    if (bar) bar.value = done;
    const all = steps > 0 && done === steps;
    if (all) finished++;
    a.classList.toggle('finished', all);
    a.classList.toggle('started', done > 0 && !all);
    if (label) label.textContent = all ? t('lessons.progressDone') : done > 0 ? t('lessons.progressText', { done, steps }) : '';
  }
  const overall = document.getElementById('lessons-overall');
  if (overall && finished > 0) overall.textContent = t('lessons.overall', { done: finished, total: links.length });
}

main();
