// Starts GraphiQL (node/graphiql.ts): the editor's workers come from this host, the options from the page's JSON block.
(() => {
  const base = document.currentScript.dataset.base;
  const workers = { editorWorkerService: 'editor.worker.js', json: 'json.worker.js', graphql: 'graphql.worker.js' };
  self.MonacoEnvironment = {
    globalAPI: false,
    getWorkerUrl: (_moduleId, label) => `${base}/${workers[label] || workers.editorWorkerService}`,
  };
  const options = JSON.parse(document.getElementById('graphiql-options').textContent);
  window.addEventListener('DOMContentLoaded', () =>
    window.YogaGraphiQL.renderYogaGraphiQL(document.getElementById('root'), options),
  );
})();
