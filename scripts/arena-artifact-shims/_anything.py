"""Stand-in for the modules the Arena artifact imports only to plot and fit (matplotlib, pylab,
statsmodels): every attribute is a callable that does nothing and returns itself."""


class _Nothing:
    def __call__(self, *args, **kwargs):
        return self

    def __getattr__(self, name):
        return self

    def __iter__(self):
        return iter(())


NOTHING = _Nothing()
