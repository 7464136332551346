// @ts-check
// nestjs-durable dashboard: "Export JSON" of a run (GET runs/:id/export), saved as a file, to replay
// it against new code in a test (replayRun of nestjs-durable/testing).
import { toast, fail } from './dom.js';
import { api } from './api.js';

/** Saves run `runId` (GET runs/:id/export) as run-<id>.json. @param {string} runId */
export function downloadRun(runId) {
  return api('runs/' + encodeURIComponent(runId) + '/export').then(function (recording) {
    var blob = new Blob([JSON.stringify(recording, null, 2) + '\n'], { type: 'application/json' });
    var a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    a.download = 'run-' + runId.replace(/[^A-Za-z0-9._-]/g, '_') + '.json';
    document.body.appendChild(a);
    a.click();
    a.remove();
    window.setTimeout(function () {
      URL.revokeObjectURL(a.href);
    }, 10000);
    toast('Exported run ' + runId + ' (' + recording.steps.length + ' steps)');
  }, fail);
}
