//! The [`Policy`](crate::Policy) applied to a caller: the federation's and each view's
//! subset per audience (cached per catalog generation), and `--check --as`'s report.

use std::sync::Arc;

use mcpwire_router::Identity;

use crate::catalog::Everything;
use crate::federation::Federation;
use crate::report::CatalogReport;
use crate::subset::{Sight, Subset};
use crate::view::View;

impl Federation {
    /// What `who` sees of the current catalog, unpaged when it sees everything.
    pub(crate) fn sight(&self, who: Option<&Identity>) -> Sight {
        if self.policy().is_open() {
            return Sight {
                catalog: self.catalog(),
                subset: None,
            };
        }
        let s = self.policed(who);
        Sight {
            catalog: s.catalog.clone(),
            subset: Some(s),
        }
    }

    /// What `who` (`None`: the anonymous caller) sees of the current catalog.
    pub(crate) fn policed(&self, who: Option<&Identity>) -> Arc<Subset> {
        let catalog = self.catalog();
        let policy = self.policy();
        self.subsets.for_caller(
            catalog.generation,
            who,
            || policy.audience(who),
            |audience| {
                Subset::policed(
                    catalog.clone(),
                    &Everything,
                    &policy,
                    audience,
                    self.page_size(),
                )
            },
        )
    }

    /// The report of what `who` (`None`: the anonymous caller) may see and call.
    pub fn report_as(&self, who: Option<&Identity>) -> CatalogReport {
        let s = self.policed(who);
        s.catalog.report(&*s)
    }
}

impl View {
    /// What `who` sees of the view.
    pub(crate) fn sight(&self, who: Option<&Identity>) -> Sight {
        let s = if self.federation().policy().is_open() {
            self.scope()
        } else {
            self.policed(who)
        };
        Sight {
            catalog: s.catalog.clone(),
            subset: Some(s),
        }
    }

    /// What `who` (`None`: the anonymous caller) sees of the view.
    pub(crate) fn policed(&self, who: Option<&Identity>) -> Arc<Subset> {
        let base = self.scope();
        let fed = self.federation();
        let policy = fed.policy();
        self.subsets().for_caller(
            base.catalog.generation,
            who,
            || policy.audience(who),
            |audience| {
                Subset::policed(
                    base.catalog.clone(),
                    &*base,
                    &policy,
                    audience,
                    fed.page_size(),
                )
            },
        )
    }

    /// The report of what `who` (`None`: the anonymous caller) may see and call in the
    /// view.
    pub fn report_as(&self, who: Option<&Identity>) -> CatalogReport {
        let s = self.policed(who);
        s.catalog.report(&*s)
    }
}
