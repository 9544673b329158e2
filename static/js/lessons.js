// The lesson list, the course map (/course) and the list a missing lesson's
// page offers: each lesson's progress, which the browser keeps
// (progress.js). On the course map a lesson not yet finished also says
// whether what it builds on is done (ready) or which lessons come first.

import { loadCatalog, t } from './i18n.js';
import { loadProgress } from './progress.js';

async function main() {
  await loadCatalog(document.body.dataset.lang || 'en');
  const links = [...document.querySelectorAll('.lesson-list a[data-lesson]')];
  const finishedSlugs = new Set();
  for (const a of links) {
    const steps = Number(a.dataset.steps);
    const done = loadProgress(a.dataset.lesson).filter((n) => n <= steps).length;
    const bar = a.querySelector('progress');
    const label = a.querySelector('.lesson-progress-text');
    if (bar) bar.value = done;
    const all = steps > 0 && done === steps;
    if (all) finishedSlugs.add(a.dataset.lesson);
    a.classList.toggle('finished', all);
    a.classList.toggle('started', done > 0 && !all);
    if (label) label.textContent = all ? t('lessons.progressDone') : done > 0 ? t('lessons.progressText', { done, steps }) : '';
  }
  for (const a of links) {
    const status = a.querySelector('[data-course-status]');
    if (!status) continue;
    const missing = (a.dataset.after || '').split(' ').filter((s) => s && !finishedSlugs.has(s));
    const ready = !finishedSlugs.has(a.dataset.lesson) && missing.length === 0;
    a.classList.toggle('ready', ready);
    a.classList.toggle('waiting', missing.length > 0 && !finishedSlugs.has(a.dataset.lesson));
    status.textContent = finishedSlugs.has(a.dataset.lesson) ? '' : ready ? t('course.ready')
      : t('course.waiting', { lessons: missing.map((s) => s.slice(0, 2)).join(', ') });
  }
  const overall = document.getElementById('lessons-overall');
  if (overall && finishedSlugs.size > 0) overall.textContent = t('lessons.overall', { done: finishedSlugs.size, total: links.length });
}

main();
