import { errorBox, page } from '../layout.ts';
import { html } from '../html.ts';

export function signInPage(error?: string): string {
  return page({
    title: 'Sign in',
    body: html`<section class="narrow">
      <h1>Sign in</h1>
      <p>Sign in with an Agentyard API key. The console then acts with that key's rights, no more.</p>
      ${error ? errorBox(error) : ''}
      <form method="post" action="/console/sign-in" class="stack">
        <label for="api-key">API key</label>
        <input id="api-key" name="api_key" type="password" autocomplete="current-password" required autofocus>
        <button type="submit">Sign in</button>
      </form>
    </section>`,
  });
}
