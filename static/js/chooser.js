// The sandbox chooser: only the chosen template's parallelism fields are
// shown and submitted.

function sync(form) {
  const chosen = form.querySelector('input[name="template"]:checked')?.value;
  for (const box of form.querySelectorAll('.template-par')) {
    const on = box.dataset.template === chosen;
    box.hidden = !on;
    for (const input of box.querySelectorAll('input')) input.disabled = !on;
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
