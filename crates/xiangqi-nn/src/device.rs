//! The compute device, chosen at run time by name: `cpu`, `wgpu`, `wgpu:N`, `cuda`, `cuda:N`.
//!
//! `cpu` is burn's `flex` backend, always built. `wgpu` (Vulkan, Metal or DirectX 12, whichever
//! the platform offers; `wgpu` alone lets wgpu pick the adapter, preferring a high-power GPU,
//! `wgpu:N` takes the N-th discrete GPU) needs the cargo feature `wgpu`; `cuda:N` the feature
//! `cuda`. A device the build lacks, or that the machine does not have, is an error that says
//! which feature or driver is missing; there is no silent fall-back to the CPU.
//!
//! [`DeviceSpec::open`] also says which adapter a wgpu device runs on ([`Adapter`]: its name,
//! graphics API and kind), so that a user can tell a GPU from a software rasterizer such as
//! Mesa's llvmpipe (lavapipe), which runs Vulkan on the CPU.

use std::fmt;
use std::str::FromStr;

use burn::tensor::{Device, Tensor};
use thiserror::Error;

/// A device by name (see the [module documentation](self)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DeviceSpec {
    /// burn's `flex` CPU backend.
    #[default]
    Cpu,
    /// wgpu: `None` lets wgpu choose the adapter; `Some(n)` is the n-th discrete GPU.
    Wgpu(Option<usize>),
    /// CUDA device `n`.
    Cuda(usize),
}

/// Why a device cannot be used.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum DeviceError {
    /// The name is not a device.
    #[error("unknown device '{0}' (expected cpu, wgpu, wgpu:N, cuda or cuda:N)")]
    Unknown(String),
    /// The build has no backend for it.
    #[error("device '{device}': this build has no {backend} backend; {advice}")]
    NotBuilt {
        /// The device asked for.
        device: DeviceSpec,
        /// The missing backend (and cargo feature).
        backend: &'static str,
        /// What to do instead.
        advice: &'static str,
    },
    /// The backend is built but the device did not come up.
    #[error("device '{device}' is not available: {reason}")]
    Unavailable {
        /// The device asked for.
        device: DeviceSpec,
        /// What failed, and what to install.
        reason: String,
    },
}

/// The kind of an [`Adapter`] that is a software rasterizer.
pub const SOFTWARE: &str = "a software rasterizer running on the CPU, not a GPU";

/// The adapter a wgpu device runs on, as the graphics driver reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Adapter {
    /// The adapter's own name (`NVIDIA GeForce RTX 4090`, `llvmpipe (LLVM 19.1.7, 256 bits)`).
    pub name: String,
    /// The graphics API it is reached through (`Vulkan`, `Metal`, `Dx12`, `Gl`), where known.
    pub backend: Option<String>,
    /// The driver and its version, where reported (empty otherwise).
    pub driver: String,
    /// What it is: `discrete GPU`, `integrated GPU`, `virtual GPU`, `GPU`, `unknown kind`, or
    /// [`SOFTWARE`].
    pub kind: &'static str,
    /// Whether it is a software rasterizer running on the CPU (llvmpipe/lavapipe,
    /// SwiftShader, WARP), not a GPU.
    pub software: bool,
}

impl fmt::Display for Adapter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if let Some(b) = &self.backend {
            write!(f, " via {b}")?;
        }
        write!(f, ", {}", self.kind)?;
        if !self.driver.is_empty() {
            write!(f, " (driver: {})", self.driver)?;
        }
        if self.software {
            f.write_str("; install the GPU's Vulkan driver to use a GPU, or use --device cpu")?;
        }
        Ok(())
    }
}

#[cfg(feature = "wgpu")]
impl Adapter {
    fn of(info: &burn::tensor::wgpu::wgpu::AdapterInfo) -> Adapter {
        use burn::tensor::wgpu::wgpu::DeviceType;
        let kind = match info.device_type {
            DeviceType::DiscreteGpu => "discrete GPU",
            DeviceType::IntegratedGpu => "integrated GPU",
            DeviceType::VirtualGpu => "virtual GPU",
            DeviceType::Cpu => SOFTWARE,
            DeviceType::Other => "unknown kind",
        };
        let driver = [info.driver.trim(), info.driver_info.trim()]
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        Adapter {
            name: info.name.clone(),
            backend: Some(format!("{:?}", info.backend)),
            driver,
            kind,
            software: info.device_type == DeviceType::Cpu,
        }
    }

    /// What burn says of a device already up (no graphics API or driver known).
    fn of_identity(device: &Device) -> Option<Adapter> {
        let identity = device.identity()?;
        let software = identity.physical.is_none();
        Some(Adapter {
            name: identity.name,
            backend: None,
            driver: String::new(),
            kind: if software { SOFTWARE } else { "GPU" },
            software,
        })
    }
}

impl fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceSpec::Cpu => f.write_str("cpu"),
            DeviceSpec::Wgpu(None) => f.write_str("wgpu"),
            DeviceSpec::Wgpu(Some(n)) => write!(f, "wgpu:{n}"),
            DeviceSpec::Cuda(n) => write!(f, "cuda:{n}"),
        }
    }
}

impl FromStr for DeviceSpec {
    type Err = DeviceError;

    fn from_str(s: &str) -> Result<DeviceSpec, DeviceError> {
        let unknown = || DeviceError::Unknown(s.to_string());
        let (name, index) = match s.split_once(':') {
            Some((name, index)) => {
                let n = index.parse::<usize>().map_err(|_| unknown())?;
                (name, Some(n))
            }
            None => (s, None),
        };
        match (name, index) {
            ("cpu", None) => Ok(DeviceSpec::Cpu),
            ("wgpu", n) => Ok(DeviceSpec::Wgpu(n)),
            ("cuda", n) => Ok(DeviceSpec::Cuda(n.unwrap_or(0))),
            _ => Err(unknown()),
        }
    }
}

/// What to install or rebuild for a backend that is built but did not come up.
fn hint(spec: DeviceSpec) -> &'static str {
    match spec {
        DeviceSpec::Cpu | DeviceSpec::Cuda(_) => "check the driver and the device index",
        DeviceSpec::Wgpu(Some(_)) => {
            "wgpu:N counts discrete GPUs only; --device wgpu takes whatever adapter there is \
             (an integrated GPU, Mesa's lavapipe)"
        }
        DeviceSpec::Wgpu(None) => {
            "no usable GPU adapter: install the GPU's Vulkan driver (on Debian or Ubuntu, \
             `apt install libvulkan1 mesa-vulkan-drivers`; Mesa's lavapipe runs Vulkan on the \
             CPU), or use --device cpu"
        }
    }
}

impl DeviceSpec {
    /// The burn device for this spec, checked by a small computation read back to the host.
    ///
    /// # Errors
    /// [`DeviceError::NotBuilt`] when this build lacks the backend; [`DeviceError::Unavailable`]
    /// when the device does not work (no adapter, no driver), with what to install.
    pub fn device(self) -> Result<Device, DeviceError> {
        self.open().map(|(device, _)| device)
    }

    /// As [`DeviceSpec::device`], with the adapter a wgpu device runs on (`None` for the CPU).
    ///
    /// # Errors
    /// As [`DeviceSpec::device`].
    // Built without a GPU backend, every device but the CPU is an error, so what follows the
    // match cannot be reached.
    #[cfg_attr(
        not(any(feature = "wgpu", feature = "cuda")),
        expect(unreachable_code, unused_variables)
    )]
    pub fn open(self) -> Result<(Device, Option<Adapter>), DeviceError> {
        #[cfg_attr(not(feature = "wgpu"), expect(unused_mut))]
        let mut adapter = None;
        let device = match self {
            DeviceSpec::Cpu => return Ok((Device::flex(), None)),
            #[cfg(feature = "wgpu")]
            DeviceSpec::Wgpu(n) => {
                let kind = match n {
                    None => burn::tensor::DeviceKind::DefaultDevice,
                    Some(i) => burn::tensor::DeviceKind::DiscreteGpu(i),
                };
                // Brought up here to learn the adapter wgpu chose; a device already up in this
                // process (a second open) cannot be again and is taken as it is.
                let up = {
                    let kind = kind.clone();
                    quietly(move || Device::wgpu_options().device_kind(kind).init_with_setup())
                };
                match up {
                    Ok(Ok((device, setup))) => {
                        adapter = Some(Adapter::of(&setup.adapter.get_info()));
                        device
                    }
                    Ok(Err(burn::tensor::wgpu::WgpuInitError::Registration { .. })) => {
                        Device::wgpu(kind)
                    }
                    Ok(Err(e)) => return Err(unavailable(self, e.to_string())),
                    Err(message) => {
                        return Err(unavailable(
                            self,
                            format!("the backend failed while starting ({message})"),
                        ));
                    }
                }
            }
            #[cfg(not(feature = "wgpu"))]
            DeviceSpec::Wgpu(_) => {
                return Err(DeviceError::NotBuilt {
                    device: self,
                    backend: "wgpu",
                    advice: "rebuild with `--features wgpu` (a default feature of xqz)",
                });
            }
            #[cfg(feature = "cuda")]
            DeviceSpec::Cuda(i) => Device::cuda(i),
            #[cfg(not(feature = "cuda"))]
            DeviceSpec::Cuda(_) => {
                return Err(DeviceError::NotBuilt {
                    device: self,
                    backend: "cuda",
                    advice: "CUDA is not supported (burn 0.22's CUDA backend downloads LLVM while \
                             it builds, and was never built or tested here); use --device wgpu, \
                             which reaches NVIDIA GPUs through Vulkan",
                });
            }
        };
        probe(self, &device)?;
        #[cfg(feature = "wgpu")]
        if adapter.is_none() {
            adapter = Adapter::of_identity(&device);
        }
        Ok((device, adapter))
    }
}

/// The error for a device that did not come up: the hint for it, then `what`.
fn unavailable(spec: DeviceSpec, what: String) -> DeviceError {
    DeviceError::Unavailable { device: spec, reason: format!("{}; {what}", hint(spec)) }
}

/// Runs `f`, catching a panic (of any thread while it runs: a backend may fail on a thread of
/// its own) as its first message, which the default panic output does not print.
fn quietly<T>(f: impl FnOnce() -> T + std::panic::UnwindSafe) -> Result<T, String> {
    let first = std::sync::Arc::new(std::sync::Mutex::new(None::<String>));
    let keep = std::sync::Arc::clone(&first);
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let text = info
            .payload()
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| info.payload().downcast_ref::<&str>().map(|s| (*s).to_string()));
        if let (Ok(mut slot), Some(text)) = (keep.lock(), text) {
            slot.get_or_insert(text);
        }
    }));
    let result = std::panic::catch_unwind(f);
    std::panic::set_hook(previous);
    result.map_err(|_| {
        first.lock().ok().and_then(|m| m.clone()).unwrap_or_else(|| "no message".to_string())
    })
}

/// Runs `2 · [1, 2]` on `device` and reads it back; a backend that panics while finding its
/// adapter is caught here (its panic message kept, the default panic output silenced).
fn probe(spec: DeviceSpec, device: &Device) -> Result<(), DeviceError> {
    let d = device.clone();
    let result = quietly(move || {
        let t = Tensor::<1>::from_data(burn::tensor::TensorData::new(vec![1.0f32, 2.0], [2]), &d);
        t.mul_scalar(2.0).try_into_vec_as::<f32>().map_err(|e| e.to_string())
    });
    match result {
        Ok(Ok(v)) if v == [2.0, 4.0] => Ok(()),
        Ok(Ok(v)) => {
            Err(unavailable(spec, format!("a test computation gave {v:?} instead of [2, 4]")))
        }
        Ok(Err(e)) => Err(unavailable(spec, e)),
        Err(message) => {
            Err(unavailable(spec, format!("the backend failed while starting ({message})")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_print_back() {
        for (text, spec) in [
            ("cpu", DeviceSpec::Cpu),
            ("wgpu", DeviceSpec::Wgpu(None)),
            ("wgpu:1", DeviceSpec::Wgpu(Some(1))),
            ("cuda:0", DeviceSpec::Cuda(0)),
        ] {
            assert_eq!(text.parse::<DeviceSpec>(), Ok(spec));
            assert_eq!(spec.to_string(), text);
        }
        assert_eq!("cuda".parse::<DeviceSpec>(), Ok(DeviceSpec::Cuda(0)));
        for bad in ["", "gpu", "cpu:0", "wgpu:", "wgpu:x", "cuda:-1", "WGPU"] {
            assert_eq!(bad.parse::<DeviceSpec>(), Err(DeviceError::Unknown(bad.to_string())));
        }
    }

    #[test]
    fn the_cpu_is_always_there() {
        assert_eq!(DeviceSpec::Cpu.device().unwrap(), Device::flex());
    }

    #[cfg(not(feature = "cuda"))]
    #[test]
    fn a_backend_the_build_lacks_says_which_feature() {
        let e = DeviceSpec::Cuda(0).device().unwrap_err();
        assert!(
            matches!(e, DeviceError::NotBuilt { device: DeviceSpec::Cuda(0), backend: "cuda", .. }),
            "{e:?}"
        );
        assert!(e.to_string().contains("use --device wgpu"), "{e}");
    }
}
