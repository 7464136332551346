// @ts-check
// nestjs-durable dashboard: what one part of the page asks of another (open a run, reload the
// lists, set a filter). The entry (dashboard.js) registers the implementations at start, so that
// panels and leaf modules call them without importing the modules that define them (no import cycle).
import { el } from './dom.js';

/**
 * @typedef {object} Navigation
 * @property {(fromTimer?: boolean) => Promise<unknown>} refreshAll Stats, the runs list and the open run.
 * @property {(id: string) => Promise<unknown>} openRun Opens a run's detail.
 * @property {(first: boolean) => Promise<unknown>} loadRun Reloads the open run's detail.
 * @property {() => void} rerenderRun Draws the open run again from what is loaded (a tab, a step folded).
 * @property {() => Promise<unknown>} loadList Reloads the runs list.
 * @property {(patch: Record<string, unknown>) => void} setFilter Changes the runs list's filter.
 */

/** @param {string} name */
function unregistered(name) {
  return function () {
    throw new Error('dashboard navigation: ' + name + ' called before dashboard.js registered it');
  };
}

/** @type {Navigation} */
export const nav = {
  refreshAll: unregistered('refreshAll'),
  openRun: unregistered('openRun'),
  loadRun: unregistered('loadRun'),
  rerenderRun: unregistered('rerenderRun'),
  loadList: unregistered('loadList'),
  setFilter: unregistered('setFilter'),
};

/** @param {Navigation} impl */
export function registerNavigation(impl) {
  Object.assign(nav, impl);
}

/**
 * A run's id as a link that opens its detail (the panels' lists of runs).
 * @param {string} id
 */
export function runLink(id) {
  return el(
    'a',
    {
      href: '#',
      class: 'mono',
      onclick: function (/** @type {Event} */ e) {
        e.preventDefault();
        nav.openRun(id);
      },
    },
    id,
  );
}
