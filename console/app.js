import { ApiError, api, describeError, loadConfig, session } from './api.js';
import { announce, focusHeading, h, view } from './dom.js';
import { LISTS, listView } from './lists.js';
import { reconciliationRunView, reconciliationView } from './reconciliation.js';
import { bulkRetryView, retryRunView, retryRunsView } from './retry-runs.js';
import { subscriptionView } from './subscription.js';

// The operator console: the failing, dunning and exceptions lists, a subscription's periods and
// audit history, the audited actions, bulk retry runs and reconciliation. Plain DOM modules, no
// framework, no build step; this one signs in and routes, each view lives in its own module.

/* ---------------- sign-in ---------------- */

async function signIn(event) {
  event.preventDefault();
  const input = document.getElementById('token');
  const token = input.value.trim();
  const out = document.getElementById('sign-in-error');
  out.replaceChildren();
  if (token === '') return;
  try {
    // Any read with the token tells whether the API takes it.
    await api('GET', '/v1/subscriptions?billing=failing&limit=1', { token });
  } catch (error) {
    const why =
      error instanceof ApiError && error.status === 401
        ? 'Sign-in failed: the API refused this token (401 Unauthorized). Check that you pasted the whole token and that it has not expired.'
        : error instanceof ApiError && error.status === 403
          ? 'Sign-in failed: this token lacks the billing:read scope (403 Forbidden).'
          : `Sign-in failed. ${describeError(error)}`;
    out.replaceChildren(h('p', { class: 'error' }, why));
    input.focus();
    return;
  }
  input.value = '';
  session.signIn(token);
  announce('Signed in');
  if (!location.hash || location.hash === '#/') location.hash = '#/failing';
  else render();
}

function signOut() {
  session.signOut();
  announce('Signed out');
  render();
}

/* ---------------- routing ---------------- */

function render() {
  const signedIn = session.token() !== null;
  document.getElementById('sign-in').hidden = signedIn;
  document.getElementById('nav').hidden = !signedIn;
  view().hidden = !signedIn;
  if (!signedIn) {
    view().replaceChildren();
    document.getElementById('token').focus();
    return;
  }
  const [route, query = ''] = location.hash.replace(/^#\/?/, '').split('?');
  const params = new URLSearchParams(query);
  const [name, ...rest] = (route ?? '').split('/');
  let content;
  if (name in LISTS) content = listView(name, params);
  else if (name === 'subscriptions' && rest[0]) content = subscriptionView(decodeURIComponent(rest.join('/')));
  else if (name === 'bulk-retry') content = bulkRetryView();
  else if (name === 'retry-runs' && rest[0]) content = retryRunView(decodeURIComponent(rest[0]));
  else if (name === 'retry-runs') content = retryRunsView();
  else if (name === 'reconciliation' && rest.length === 2) content = reconciliationRunView(decodeURIComponent(rest[0]), decodeURIComponent(rest[1]));
  else if (name === 'reconciliation') content = reconciliationView(params);
  else {
    location.hash = '#/failing';
    return;
  }
  for (const link of document.querySelectorAll('#nav a')) {
    if (link.getAttribute('href') === `#/${name}`) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  view().replaceChildren(content);
  focusHeading();
}

document.getElementById('sign-in-form').addEventListener('submit', signIn);
document.getElementById('sign-out').addEventListener('click', signOut);
document.addEventListener('console:sign-out', signOut);
window.addEventListener('hashchange', render);
await loadConfig();
render();
