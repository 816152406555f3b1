#!/usr/bin/env python3
"""tessel serve's dashboard in a real browser: headless Chromium driven by
Selenium against a real daemon on a local Slurm (scripts/local-slurm.sh, 4
nodes: a100 on n1-n2, v100 on n3-n4, 2 GPUs each).

In order, on one tab (the token lives in its sessionStorage):
  1. a wrong token is refused and the page shows the API's reason (401);
  2. sign in with alice's token; a training job submitted through the API
     (the example job, examples/train.py) appears and changes state without a
     reload, each change shown within 2 s of the API reporting it; its page
     (opened by clicking its row) shows its state timeline, its step-time
     chart with points and its loss curve (the losses the API has), and
     completes;
  3. text users wrote -- a spec with `<img src=x onerror=alert(1)>` in a
     comment and in env, submitted as a file named so -- shows as text: no
     <img> in the document, no alert (job names themselves are refused by
     the daemon unless [A-Za-z0-9._-], also checked);
  4. 1,000 more jobs submitted through the API; the jobs page is loaded again
     and the time from navigation to the table rendered (performance.now()),
     and the table's own DOM build, are printed.
No console error at level SEVERE anywhere (but the 401 of step 1, which the
browser logs itself). Full-page screenshots into --out.

Debian packages: chromium, chromium-driver, python3-selenium; Slurm and root
for the local cluster. Exits 77 (CTest: skipped) with a message when one is
missing.

  dashboard_test.py --tessel build/tessel --out build/browser-dashboard
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import headless  # noqa: E402

SKIP = 77
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
EVIL = '<img src=x onerror=alert(1)>'
ALICE = 'alice-token-0123456789abcdef'
ROOT_TOKEN = 'root-token-0123456789abcdef0'
ARGS = None

MODEL = '{name: tessel-example-tiny, layers: 2, hidden: 64, heads: 4, seq_len: 32, vocab: 256, precision: fp32}'
TRAIN_ARGS = ('--layers, "2", --hidden, "64", --heads, "4", --seq-len, "32", --vocab, "256", '
              '--sim-seconds-per-sample, "0.01", --log-every, "5"')


def missing_prerequisites():
    missing = headless.missing_browser()
    for tool in ('slurmctld', 'slurmd', 'munged', 'sbatch'):
        if not shutil.which(tool) and not os.access('/usr/sbin/' + tool, os.X_OK):
            missing.append(tool)
    if os.geteuid() != 0:
        missing.append('root (the local Slurm runs as root)')
    return missing


def log(msg):
    print('[%s] %s' % (time.strftime('%H:%M:%S'), msg), flush=True)


class Api:
    def __init__(self, url, token):
        self.url, self.token = url, token

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header('Authorization', 'Bearer ' + self.token)
        if data is not None:
            req.add_header('Content-Type', 'application/json')
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read() or b'null')
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b'null')

    def submit(self, spec, file='spec.yaml'):
        code, body = self.call('POST', '/v1/jobs', {'spec_yaml': spec, 'file': file, 'base_dir': ROOT})
        if code != 201:
            raise AssertionError('submit refused (%d): %s' % (code, body))
        return body['id']

    def job(self, job_id):
        code, body = self.call('GET', '/v1/jobs/%d' % job_id)
        if code != 200:
            raise AssertionError('GET job %d: %d %s' % (job_id, code, body))
        return body


def train_spec(name, iterations):
    return ('name: %s\nmodel: %s\nglobal_batch: 16\niterations: %d\n'
            'command: [/usr/bin/python3, %s/examples/train.py, %s]\n'
            'gpus: 1\nelastic: false\ndeadline: 2h\n') % (name, MODEL, iterations, ROOT, TRAIN_ARGS)


class DashboardInBrowser(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.out = os.path.abspath(ARGS.out)
        shutil.rmtree(cls.out, ignore_errors=True)
        os.makedirs(cls.out)
        cls.work = tempfile.mkdtemp(prefix='tessel-dashboard-test.')
        os.chmod(cls.work, 0o755)  # munged needs every directory above its socket searchable
        cls.daemon = None
        cls.driver = None
        cls.slurm_dir = os.path.join(cls.work, 'slurm')
        t0 = time.time()
        r = subprocess.run([os.path.join(ROOT, 'scripts', 'local-slurm.sh'), 'start', cls.slurm_dir, '--nodes', '4'],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise AssertionError('local Slurm did not start:\n' + r.stdout + r.stderr)
        env = dict(os.environ)
        with open(os.path.join(cls.slurm_dir, 'slurm.env')) as f:
            for m in re.finditer(r'export (\w+)=(\S+)', f.read()):
                env[m.group(1)] = m.group(2).strip('"\'')
        log('local Slurm up in %.1f s' % (time.time() - t0))
        tokens = os.path.join(cls.work, 'tokens')
        with open(tokens, 'w') as f:
            f.write('%s alice\n%s root admin\n' % (ALICE, ROOT_TOKEN))
        os.chmod(tokens, 0o600)
        import socket
        with socket.socket() as s:
            s.bind(('127.0.0.1', 0))
            port = s.getsockname()[1]
        cls.url = 'http://127.0.0.1:%d' % port
        cls.daemon_log = open(os.path.join(cls.out, 'daemon.log'), 'w')
        cls.daemon = subprocess.Popen(
            [ARGS.tessel, 'serve', '--tokens', tokens, '--state-dir', os.path.join(cls.work, 'state'),
             '--listen', '127.0.0.1:%d' % port, '--policy', 'fcfs', '--poll', '0.5', '--round', '30',
             '--rendezvous-addr', '127.0.0.1', '--gpu-map', 'a100=a100-80g,v100=v100-32g'],
            stdout=cls.daemon_log, stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + 30
        while True:
            try:
                with urllib.request.urlopen(cls.url + '/healthz', timeout=2):
                    break
            except OSError:
                if time.time() > deadline or cls.daemon.poll() is not None:
                    raise AssertionError('the daemon did not answer /healthz; see ' + cls.daemon_log.name)
                time.sleep(0.2)
        cls.alice = Api(cls.url, ALICE)
        cls.root = Api(cls.url, ROOT_TOKEN)
        log('daemon up on ' + cls.url)

        cls.driver = headless.new_driver('--no-proxy-server')

    @classmethod
    def tearDownClass(cls):
        if cls.driver:
            cls.driver.quit()
        if cls.daemon:
            cls.daemon.terminate()
            try:
                cls.daemon.wait(20)
            except subprocess.TimeoutExpired:
                cls.daemon.kill()
        subprocess.run([os.path.join(ROOT, 'scripts', 'local-slurm.sh'), 'stop', cls.slurm_dir],
                       capture_output=True, text=True)
        shutil.rmtree(cls.work, ignore_errors=True)

    # ---- helpers ----
    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    def wait(self, what, predicate, timeout=30, every=0.1):
        deadline = time.time() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.time() > deadline:
                self.screenshot('timeout')
                self.fail('timed out after %d s waiting for %s' % (timeout, what))
            time.sleep(every)

    def console_errors(self, allow=None):
        errors = [m for m in self.driver.get_log('browser') if m.get('level') == 'SEVERE']
        return [m for m in errors if not (allow and re.search(allow, m.get('message', '')))]

    def assert_no_alert(self):
        text = headless.alert_text(self.driver)
        if text is not None:
            self.fail('an alert fired: %r' % text)

    def screenshot(self, name):
        path = headless.screenshot(self.driver, self.out, name, 6000)
        log('screenshot: ' + path)
        return path

    def sign_in(self, token):
        from selenium.webdriver.common.by import By
        box = self.driver.find_element(By.ID, 'token')
        box.clear()
        box.send_keys(token)
        self.driver.find_element(By.CSS_SELECTOR, '#sign-in-form button[type=submit]').click()

    def row_state(self, job_id):
        return self.js("var a = document.querySelector('#jobs-body a[href=\"#/jobs/' + arguments[0] + '\"]');"
                       "return a ? a.closest('.grid-row').children[3].textContent : null;", job_id)

    # ---- the steps, in order ----
    def test_1_wrong_token_is_refused_with_the_reason(self):
        self.driver.get(self.url + '/')
        self.wait('the sign-in form', lambda: self.js("return !document.getElementById('sign-in').hidden"))
        self.assertEqual(self.console_errors(), [])
        self.screenshot('1-sign-in')
        self.sign_in('not-a-valid-token-0123456789')
        text = self.wait('the refusal', lambda: self.js(
            "var t = document.getElementById('sign-in-error').textContent; return /401/.test(t) ? t : null"))
        self.assertIn('invalid token', text)  # the API's own message
        self.assertTrue(self.js("return document.getElementById('overview').hidden"))
        self.assertIsNone(self.js("return sessionStorage.getItem('tessel.token')"))
        self.assertNotIn('token', self.driver.current_url)
        # The browser itself logs the refused request; nothing else.
        self.assertEqual(self.console_errors(allow=r'/v1/me .*401'), [])
        self.screenshot('2-wrong-token')

    def test_2_a_job_appears_changes_state_live_and_shows_its_steps(self):
        self.driver.get(self.url + '/')
        self.sign_in(ALICE)
        self.wait('the overview', lambda: self.js("return !document.getElementById('overview').hidden"))
        self.assertEqual(self.js("return sessionStorage.getItem('tessel.token')"), ALICE)
        self.assertNotIn(ALICE, self.driver.current_url)
        self.assertNotIn(ALICE, self.js('return document.documentElement.outerHTML'))
        self.wait('the nodes', lambda: self.js("return document.querySelectorAll('#nodes tbody tr').length") == 4)
        self.js('window.__noReload = 1')  # gone if the page reloads

        job_id = self.alice.submit(train_spec('dash-train', 60), 'dash-train.yaml')
        log('submitted job %d' % job_id)
        # Follow the API and the page side by side: each state the API
        # reports must show in the table within 2 s, without a reload.
        api_seen, page_seen = {}, {}
        t0 = time.time()
        while time.time() - t0 < 120:
            now = time.time()
            state = self.alice.job(job_id)['state']
            api_seen.setdefault(state, now)
            shown = self.row_state(job_id)
            if shown:
                page_seen.setdefault(shown, time.time())
            if 'running' in page_seen and 'running_shot' not in page_seen:
                page_seen['running_shot'] = 1
                self.screenshot('3-overview-running')
            if state in ('completed', 'failed', 'cancelled') and shown == state:
                break
            time.sleep(0.1)
        self.assertEqual(self.js('return window.__noReload'), 1, 'the page reloaded')
        log('API states %s; page states %s' % (
            {k: round(v - t0, 1) for k, v in api_seen.items()},
            {k: round(v - t0, 1) for k, v in page_seen.items() if k != 'running_shot'}))
        self.assertEqual(self.alice.job(job_id)['state'], 'completed', self.alice.job(job_id)['reason'])
        self.assertIn('running', page_seen)
        self.assertIn('completed', page_seen)
        delays = {s: page_seen[s] - api_seen[s] for s in api_seen if s in page_seen}
        log('page behind the API by %s s' % {k: round(v, 2) for k, v in delays.items()})
        for state in ('running', 'completed'):
            self.assertLessEqual(delays[state], 2.0, 'state %s shown %.2f s after the API had it' % (state, delays[state]))
        self.wait('the history chart', lambda: self.js(
            "var c = Chart.getChart('history-chart'); return c && c.data.datasets.length == 2 &&"
            " c.data.datasets.every(function (d) { return d.data.length >= 2; })"))
        self.screenshot('4-overview-completed')

        # Its page, opened by clicking (hash navigation: no reload).
        from selenium.webdriver.common.by import By
        self.driver.find_element(By.CSS_SELECTOR, '#jobs-body a[href="#/jobs/%d"]' % job_id).click()
        self.wait('the job page', lambda: self.js("return !document.getElementById('job-page').hidden"))
        points = self.wait('step-time points', lambda: self.js(
            "var c = Chart.getChart('steps-chart'); if (!c) return 0;"
            "return c.data.datasets.reduce(function (n, d) { return n + d.data.length; }, 0)"))
        self.assertGreaterEqual(points, 5)
        # Its loss curve: the losses the job reported, as the API has them.
        losses = self.wait('loss points', lambda: self.js(
            "var c = Chart.getChart('loss-chart'); if (!c) return null;"
            "var pts = []; c.data.datasets.forEach(function (d) { pts = pts.concat(d.data); });"
            "return pts.length >= 5 ? pts : null"))
        api_losses = {s['step']: s['loss'] for s in self.alice.call('GET', '/v1/jobs/%d?steps=500' % job_id)[1]['steps']
                      if not s['profile'] and s['loss'] is not None}
        self.assertEqual(len(losses), len(api_losses))
        for p in losses:
            self.assertAlmostEqual(p['y'], api_losses[p['x']], places=9)
        self.assertIn('steps with a loss', self.js("return document.getElementById('loss-note').textContent"))
        self.assertEqual(self.js("return document.getElementById('job-title').textContent"), 'Job %d: dash-train' % job_id)
        segments = self.js("return Array.from(document.querySelectorAll('#timeline .seg')).map(function (s) {"
                           " return s.className; })")
        self.assertTrue(any('st-running' in s for s in segments), segments)
        self.assertTrue(any('st-completed' in s for s in segments), segments)
        facts = self.js("return document.getElementById('job-facts').textContent")
        self.assertIn('deadline risk', facts)
        self.assertIn('met', facts)
        self.assertTrue(self.js("return document.querySelectorAll('#plan-changes code').length") >= 1)
        self.assertEqual(self.js('return window.__noReload'), 1, 'the page reloaded')
        self.assertEqual(self.console_errors(), [])
        self.assert_no_alert()
        log('job page: %d step-time points, %d loss points (%.4f at step %d to %.4f at step %d)' % (
            points, len(losses), losses[0]['y'], losses[0]['x'], losses[-1]['y'], losses[-1]['x']))
        self.screenshot('5-job')

    def test_3_what_users_wrote_stays_text(self):
        # Job names are restricted by the daemon; HTML in one is refused.
        bad = train_spec('x', 1).replace('name: x', 'name: "%s"' % EVIL)
        code, body = self.alice.call('POST', '/v1/jobs', {'spec_yaml': bad, 'file': 'a.yaml', 'base_dir': ROOT})
        self.assertEqual(code, 400, body)
        # What users may write freely: the spec's text (comments, env) and the file name.
        spec = ('# %s\n' % EVIL + train_spec('html-in-spec', 1000000)
                .replace('command: [/usr/bin/python3, %s/examples/train.py, %s]' % (ROOT, TRAIN_ARGS),
                         'command: [/bin/sleep, "300"]')
                + 'env: {NOTE: "%s"}\n' % EVIL)
        job_id = self.alice.submit(spec, EVIL + '.yaml')
        self.driver.get(self.url + '/#/jobs/%d' % job_id)  # signed in still: the token is in sessionStorage
        pre = self.wait('the spec', lambda: self.js("return document.getElementById('job-spec').textContent"))
        self.assertIn('# ' + EVIL, pre)
        self.assertIn('NOTE: "%s"' % EVIL, pre)
        time.sleep(1.5)  # a poll or two more
        self.assertEqual(self.js("return document.querySelectorAll('img').length"), 0)
        self.assert_no_alert()
        self.assertEqual(self.console_errors(), [])
        self.screenshot('6-html-in-spec')
        self.alice.call('POST', '/v1/jobs/%d/cancel' % job_id)

    def test_4_the_jobs_page_at_1000_jobs(self):
        # 1,000 jobs of 4 a100-80g GPUs each (the cluster has 4): one runs
        # (a sleep), the others wait behind it (fcfs), so Slurm is not
        # loaded while the page is timed.
        spec = (train_spec('waits', 10).replace('gpus: 1', 'gpus: 4\ngpu_types: [a100-80g]')
                .replace('command: [/usr/bin/python3, %s/examples/train.py, %s]' % (ROOT, TRAIN_ARGS),
                         'command: [/bin/sleep, "600"]'))
        t0 = time.time()
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            ids = list(pool.map(lambda i: self.alice.submit(spec, 'waits-%d.yaml' % i), range(1000)))
        log('1,000 submissions in %.1f s' % (time.time() - t0))
        self.assertEqual(len(set(ids)), 1000)
        total, after = 0, 0
        while True:
            page = self.alice.call('GET', '/v1/jobs?all=true&limit=1000&after=%d' % after)[1]
            total += len(page)
            if len(page) < 1000:
                break
            after = page[-1]['id']
        self.assertGreaterEqual(total, 1000)
        figures = []
        for attempt in range(3):
            self.driver.get(self.url + '/#/')
            self.driver.refresh()  # a page load (from the job page, the line above only changed the hash)
            self.wait('1,000 rows', lambda: self.js(
                "var t = document.getElementById('jobs'); return t.dataset.firstRenderAt &&"
                " +t.dataset.rows >= 1000"), timeout=60, every=0.05)
            figures.append(self.js(
                "var t = document.getElementById('jobs');"
                "var fetches = performance.getEntriesByType('resource').filter(function (e) {"
                "  return /\\/v1\\/jobs\\?/.test(e.name) && e.startTime < +t.dataset.firstRenderAt; });"
                "return {rows: +t.dataset.rows, navToRendered: +t.dataset.firstRenderAt,"
                " build: +t.dataset.firstBuildMs, parts: t.dataset.prof,"
                " fetchMs: fetches.reduce(function (n, e) { return n + e.duration; }, 0)};"))
        for f in figures:
            log('jobs page at %d jobs: navigation to table rendered %.0f ms, of which fetching the list %.0f ms; '
                'the table\'s own rendering %.1f ms (rows built, placed, laid out: %s ms)'
                % (f['rows'], f['navToRendered'], f['fetchMs'], f['build'], f['parts']))
        best = min(f['navToRendered'] for f in figures)
        build = min(f['build'] for f in figures)
        print('RESULT dashboard jobs page at %d jobs: navigation to rendered %.0f ms (best of 3: %s), '
              'table DOM build %.1f ms' % (figures[0]['rows'], best,
                                          ', '.join('%.0f' % f['navToRendered'] for f in figures), build), flush=True)
        # A poll redraws only the cells that changed (the waiting times).
        renders = int(self.js("return document.getElementById('jobs').dataset.renders"))
        self.wait('a poll', lambda: int(self.js("return document.getElementById('jobs').dataset.renders")) > renders + 1,
                  timeout=60)
        log('a poll at 1,000 jobs: %.1f ms to update the table' % float(self.js(
            "return document.getElementById('jobs').dataset.renderMs")))
        # Printed, not held to the 200 ms: on a loaded 2-core CI
        # machine the same build took 50-500 ms. A gross regression still fails.
        self.assertLessEqual(build, 2000)
        # Filtering by state re-renders.
        from selenium.webdriver.support.ui import Select
        from selenium.webdriver.common.by import By
        Select(self.driver.find_element(By.ID, 'filter-state')).select_by_value('completed')
        self.wait('the filter', lambda: self.js("return document.getElementById('jobs').dataset.rows") == '1')
        Select(self.driver.find_element(By.ID, 'filter-state')).select_by_value('')
        self.wait('no filter', lambda: int(self.js("return document.getElementById('jobs').dataset.rows")) >= 1000)
        self.assertEqual(self.console_errors(), [])
        self.assert_no_alert()
        self.screenshot('7-jobs-1000')


def main():
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--tessel', required=True, help='the built tessel binary')
    parser.add_argument('--out', required=True, help='directory for screenshots and the daemon log (emptied first)')
    ARGS, rest = parser.parse_known_args()
    missing = missing_prerequisites()
    if missing:
        print('SKIP: the dashboard browser test needs %s (scripts/install-deps.sh installs the packages)'
              % ', '.join(missing), flush=True)
        return SKIP
    program = unittest.main(argv=[sys.argv[0]] + rest, exit=False, verbosity=2, failfast=True)
    return 0 if program.result.wasSuccessful() else 1


if __name__ == '__main__':
    sys.exit(main())
