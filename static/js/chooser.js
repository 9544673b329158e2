// The sandbox chooser: only the chosen template's parallelism fields are
// shown and submitted, and only the settings its job takes (state TTL for a
// job with keyed state, the time domain for one with timers); the TTL's
// details are off until a TTL is chosen.

function sync(form) {
  const chosen = form.querySelector('input[name="template"]:checked')?.value;
  for (const box of form.querySelectorAll('.template-par')) {
    const on = box.dataset.template === chosen;
    box.hidden = !on;
    for (const input of box.querySelectorAll('input')) input.disabled = !on;
  }
  const ttl = form.querySelector('#ttl');
  for (const field of form.querySelectorAll('[data-templates]')) {
    const on = field.dataset.templates.split(' ').includes(chosen);
    field.hidden = !on;
    const off = !on || (field.classList.contains('ttl-detail') && !ttl?.value);
    for (const input of field.querySelectorAll('input, select')) input.disabled = off;
  }
  // A short option label on a phone; the whole sentence under the select.
  for (const hint of form.querySelectorAll('[data-hint-for]')) {
    const option = form.querySelector('#' + hint.dataset.hintFor)?.selectedOptions[0];
    const full = option?.dataset.full || '';
    hint.textContent = full !== option?.text ? full : '';
    hint.hidden = hint.textContent === '';
  }
  for (const card of form.querySelectorAll('.template-card')) {
    card.classList.toggle('chosen', card.querySelector('input[name="template"]').checked);
  }
}

const form = document.getElementById('sandbox-form');
if (form) {
  form.addEventListener('change', () => sync(form));
  sync(form);
}
