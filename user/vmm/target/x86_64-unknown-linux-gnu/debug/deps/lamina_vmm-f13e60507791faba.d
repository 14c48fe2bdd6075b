/work/main/user/vmm/target/x86_64-unknown-linux-gnu/debug/deps/lamina_vmm-f13e60507791faba.d: src/main.rs src/devices/mod.rs src/devices/pic.rs src/devices/pit.rs src/devices/uart.rs src/host_timer.rs src/kvm.rs src/linux_boot.rs src/run_loop.rs

/work/main/user/vmm/target/x86_64-unknown-linux-gnu/debug/deps/lamina_vmm-f13e60507791faba: src/main.rs src/devices/mod.rs src/devices/pic.rs src/devices/pit.rs src/devices/uart.rs src/host_timer.rs src/kvm.rs src/linux_boot.rs src/run_loop.rs

src/main.rs:
src/devices/mod.rs:
src/devices/pic.rs:
src/devices/pit.rs:
src/devices/uart.rs:
src/host_timer.rs:
src/kvm.rs:
src/linux_boot.rs:
src/run_loop.rs:
