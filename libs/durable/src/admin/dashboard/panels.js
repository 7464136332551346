// @ts-check
// nestjs-durable dashboard: the folding panels above the runs list (<details>), loaded when opened.
import { $ } from './dom.js';
import { REFRESH_MS } from './constants.js';

/**
 * A folding panel (<details id=panelId>) that loads when opened and, while open, every REFRESH_MS
 * as long as live refresh is on, the tab is visible and `busy()` (if given) says nothing is in the way.
 * @param {string} panelId
 * @param {() => unknown} load
 * @param {() => boolean} [busy]
 */
export function whileOpen(panelId, load, busy) {
  var found = /** @type {HTMLDetailsElement | null} */ ($(panelId));
  if (!found) return;
  var panel = found;
  panel.addEventListener('toggle', function () {
    if (panel.open) load();
  });
  setInterval(function () {
    var live = /** @type {HTMLInputElement | null} */ ($('live'));
    if (panel.open && (!live || live.checked) && !document.hidden && !(busy && busy())) load();
  }, REFRESH_MS);
}
