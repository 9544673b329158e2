// A lesson page: opens the lesson's own session (at the step of the
// address's #step-N) and starts the live view beside the text.

const ws = document.getElementById('workspace');
const m = /^#step-(\d+)$/.exec(location.hash);
if (ws && m && ws.dataset.ws.startsWith('lesson=') && Number(m[1]) > 1) {
  ws.dataset.ws += `&step=${m[1]}`;
}
await import('./live.js');
