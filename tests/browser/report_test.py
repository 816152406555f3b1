#!/usr/bin/env python3
"""report.html in a real browser: headless Chromium driven by Selenium.

Generates two reports with the built tessel -- `compare` of three policies
on a cluster and a trace whose names are HTML (a YAML cluster named
<img src=x onerror=alert(1)>, a generated trace with deadlines in a file
named <img src=x onerror=alert(2)>.csv), and `simulate` of one policy on the
embedded demo cluster and workload -- opens each via file://, and checks:
no console message at level SEVERE (a script error, a blocked resource or
a Content-Security-Policy refusal would be one), every chart has at least
one dataset with at least one point (through Chart.instances), one dataset
and one table column per policy, the names show as text (no <img> in the
document, no alert). A copy of the page with its script altered must show
up as broken (console error, no chart), so the checks can fail. Saves
full-page screenshots into --out and prints their paths.

Debian packages: chromium, chromium-driver, python3-selenium. Exits 77
(CTest: skipped) with a message when one is missing.

  report_test.py --tessel build/tessel --out build/browser-report
"""
import argparse
import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import headless  # noqa: E402

SKIP = 77
EVIL_CLUSTER = '<img src=x onerror=alert(1)>'
EVIL_TRACE = '<img src=x onerror=alert(2)>'
ARGS = None


def missing_prerequisites():
    return headless.missing_browser()


def run(cmd, **kw):
    result = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if result.returncode != 0:
        raise AssertionError('%s failed (%d):\n%s%s' % (' '.join(cmd), result.returncode, result.stdout, result.stderr))
    return result


class ReportInBrowser(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        out = os.path.abspath(ARGS.out)
        shutil.rmtree(out, ignore_errors=True)
        inputs = os.path.join(out, 'inputs')
        os.makedirs(inputs)
        tessel = ARGS.tessel
        cluster = os.path.join(inputs, 'cluster.yaml')
        with open(cluster, 'w') as f:
            f.write('name: "%s"\npools:\n' % EVIL_CLUSTER)
            f.write('  - {name: a100, gpu: a100-80g, nodes: 1, node_type: dgx-a100-80g}\n')
            f.write('  - {name: v100, gpu: v100-32g, nodes: 2, node_type: dgx-1-v100}\n')
        trace = os.path.join(inputs, EVIL_TRACE + '.csv')
        run([tessel, 'gen-trace', '--jobs', '120', '--deadlines', '0.5', '--seed', '3', '--rate', '60',
             '--max-job-gpus', '16', '--out', trace])
        cls.compare_dir = os.path.join(out, 'compare')
        cls.policies = ['fcfs', 'srtf', 'tiresias']
        run([tessel, 'compare', '--cluster', cluster, '--trace', trace, '--policies', ','.join(cls.policies),
             '--out', cls.compare_dir, '--no-progress'])
        cls.simulate_dir = os.path.join(out, 'simulate')
        run([tessel, 'simulate', '--policy', 'tiresias', '--out', cls.simulate_dir, '--no-progress'])
        cls.out = out

        cls.driver = headless.new_driver()

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()

    def open(self, path):
        """Loads `path`; returns the console messages at level SEVERE."""
        from selenium.webdriver.support.ui import WebDriverWait
        self.driver.get_log('browser')  # drop what earlier pages logged
        self.driver.get('file://' + path)
        WebDriverWait(self.driver, 30).until(
            lambda d: d.execute_script('return document.readyState') == 'complete')
        return [m for m in self.driver.get_log('browser') if m.get('level') == 'SEVERE']

    def assert_no_alert(self):
        text = headless.alert_text(self.driver)
        if text is not None:
            self.fail('an alert fired: %r' % text)

    def charts(self):
        return self.driver.execute_script(
            "if (typeof Chart === 'undefined') return null;"
            "return Object.values(Chart.instances).map(function (c) { return {"
            "  title: c.canvas.getAttribute('aria-label'), type: c.config.type,"
            "  points: c.data.datasets.map(function (d) { return d.data.length; }),"
            "  labels: c.data.datasets.map(function (d) { return d.label; })}; });")

    def screenshot(self, name):
        path = headless.screenshot(self.driver, self.out, name, 8000)
        print('screenshot: ' + path, flush=True)
        return path

    def check_page(self, path, policies, charts_expected):
        errors = self.open(path)
        self.assert_no_alert()
        self.assertEqual(errors, [], 'console errors on %s' % path)
        charts = self.charts()
        self.assertIsNotNone(charts, 'Chart.js did not load')
        canvases = self.driver.execute_script("return document.querySelectorAll('canvas').length")
        self.assertEqual(len(charts), canvases)
        self.assertEqual(sorted(c['title'] for c in charts), sorted(charts_expected))
        for c in charts:
            self.assertEqual(c['labels'], policies, c['title'])
            self.assertTrue(c['points'] and all(n >= 1 for n in c['points']), c)
        heads = self.driver.execute_script(
            "return Array.from(document.querySelectorAll('#summary thead th')).map(function (t) {"
            " return t.textContent; })")
        self.assertEqual(heads, ['policy'] + policies)
        rows = self.driver.execute_script("return document.querySelectorAll('#summary tbody tr').length")
        self.assertGreaterEqual(rows, 15)
        self.assertEqual(self.driver.execute_script("return document.querySelectorAll('img').length"), 0)

    BASE_CHARTS = ['JCT CDF', 'GPUs allocated', 'GPUs making progress', 'Queue length', 'Allocation by GPU type',
                   'JCT and queueing', 'Restarts']

    def test_compare_with_html_in_names(self):
        page = os.path.join(self.compare_dir, 'report.html')
        self.check_page(page, self.policies, self.BASE_CHARTS + ['Deadlines met', 'Tardiness'])
        title = self.driver.execute_script("return document.getElementById('title').textContent")
        setup = self.driver.execute_script("return document.getElementById('setup').textContent")
        self.assertIn(EVIL_CLUSTER, title)
        self.assertIn(EVIL_CLUSTER, self.driver.title)
        self.assertIn(EVIL_TRACE + '.csv', setup)
        self.screenshot('compare')

    def test_simulate_of_one_policy(self):
        page = os.path.join(self.simulate_dir, 'report.html')
        self.check_page(page, ['tiresias'], self.BASE_CHARTS)
        self.screenshot('simulate')

    def test_a_broken_page_is_seen(self):
        # Alter the page's own script: its hash no longer matches the
        # Content-Security-Policy, so the browser must refuse it.
        with open(os.path.join(self.compare_dir, 'report.html')) as f:
            html = f.read()
        self.assertIn("'use strict';", html)
        broken = os.path.join(self.out, 'broken.html')
        with open(broken, 'w') as f:
            f.write(html.replace("'use strict';", "'use strict'; ", 1))
        errors = self.open(broken)
        self.assertTrue(any('Content Security Policy' in m.get('message', '') for m in errors), errors)
        self.assertEqual(self.charts(), [])


def main():
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--tessel', required=True, help='the built tessel binary')
    parser.add_argument('--out', required=True, help='directory for reports and screenshots (emptied first)')
    ARGS, rest = parser.parse_known_args()
    missing = missing_prerequisites()
    if missing:
        print('SKIP: report.html browser test needs Debian packages %s (scripts/install-deps.sh installs them)'
              % ', '.join(missing), flush=True)
        return SKIP
    program = unittest.main(argv=[sys.argv[0]] + rest, exit=False, verbosity=2)
    return 0 if program.result.wasSuccessful() else 1


if __name__ == '__main__':
    sys.exit(main())
