// nestjs-durable dashboard: "Export JSON" of a run (GET runs/:id/export), saved as a file, to replay
// it against new code in a test (replayRun of nestjs-durable/testing). Uses the helpers dashboard.js exposes.
(function () {
  'use strict';

  function download(runId) {
    var D = window.DurableDashboard;
    return D.api('runs/' + encodeURIComponent(runId) + '/export').then(function (recording) {
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
      D.toast('Exported run ' + runId + ' (' + recording.steps.length + ' steps)');
    }, D.fail);
  }

  window.DurableRunExport = { download: download };
})();
