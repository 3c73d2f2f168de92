//! Narrow views of the [`Store`]: a shell module declares the store
//! methods it uses, and holds a view that has only those.
//!
//! Owns: the [`store_view!`] macro. Must not: add behaviour; a view's
//! method is the store's own, called through.
//!
//! Prow's plugins each declare the small client interface they use, so a
//! reader sees at the top of a plugin what it can touch. The store has
//! about a hundred public methods; `app::ship` needs ten of them. A view
//! written next to the module's struct says which, and the compiler keeps
//! it true: a method the module starts using has to be added to its view,
//! where a reviewer sees it. Every view also has the store's clock, and its
//! parsed plans (`store::plans`: pure parses, shared by the process). The
//! wiring (`app::start`) holds the whole store and makes the views; the
//! processor, the executor and the loops hold views of their own.

/// Declares a view: a cloneable handle around a [`Store`] with exactly the
/// listed `async` methods, each forwarding to the store's method of the
/// same name and signature. `facts { fn name() -> T; }` after them lists
/// the store's plain (not `async`) answers the module reads, such as
/// whether replicas share it. `hands name: OtherView;` after the methods
/// lets the module pass another module's view on (`name()`), for the
/// shared parts it calls (`app::commit_changes`, `app::resync`): declared
/// too, where a reader sees it.
///
/// ```ignore
/// store_view! {
///     /// What shipping reads.
///     pub struct ShipStore {
///         async fn labels(repo: &RepoName) -> Result<BTreeSet<String>, StoreError>;
///     }
/// }
/// let ship = ShipStore::of(store.clone());
/// ```
macro_rules! store_view {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[$method_meta:meta])*
                async fn $method:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty;
            )*
        }
        $(
            facts {
                $(
                    $(#[$fact_meta:meta])*
                    fn $fact:ident() -> $fact_ret:ty;
                )*
            }
        )?
        $(
            $(#[$hand_meta:meta])*
            hands $hand:ident: $hand_ty:ty;
        )*
    ) => {
        $(#[$meta])*
        #[derive(Clone)]
        $vis struct $name {
            store: $crate::store::Store,
        }

        impl $name {
            /// The view of `store`.
            pub fn of(store: $crate::store::Store) -> Self {
                Self { store }
            }

            /// The clock the store stamps times from.
            #[allow(dead_code)]
            pub fn clock(&self) -> &$crate::clock::Clock {
                self.store.clock()
            }

            /// The stored plans, parsed once per text (`store::plans`).
            #[allow(dead_code)]
            pub fn plans(&self) -> &$crate::store::ParsedPlans {
                self.store.plans()
            }

            $(
                $(#[$method_meta])*
                pub async fn $method(&self, $($arg: $ty),*) -> $ret {
                    self.store.$method($($arg),*).await
                }
            )*

            $($(
                $(#[$fact_meta])*
                pub fn $fact(&self) -> $fact_ret {
                    self.store.$fact()
                }
            )*)?

            $(
                $(#[$hand_meta])*
                pub fn $hand(&self) -> $hand_ty {
                    <$hand_ty>::of(self.store.clone())
                }
            )*
        }
    };
}

pub(crate) use store_view;
