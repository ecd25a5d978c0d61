"""Lightning callbacks: calibration error, interval and reliability diagrams every epoch.

Add one line to a Trainer's callbacks::

    trainer = Trainer(callbacks=[CalibrationMonitor(num_classes=17, ignore_index=-100)])
"""

from calib_metrics.callbacks.calibration_monitor import CalibrationMonitor
from calib_metrics.callbacks.recalibration import TemperatureRecalibration

__all__ = ["CalibrationMonitor", "TemperatureRecalibration"]
